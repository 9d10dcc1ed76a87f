//! Integration tests: generated project layouts in temporary directories,
//! one module per area.

mod detect;
mod doctor;
mod init;
mod layouts;
mod real_tools;
