//! `probe <url> <expected text>`: fetches an http:// URL on loopback and exits
//! 0 only when the status is 200 and the body contains the expected text.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(url), Some(expected)) = (args.first(), args.get(1)) else {
        eprintln!("usage: probe <http://host:port/path> <expected text>");
        return ExitCode::from(2);
    };
    let Some(rest) = url.strip_prefix("http://") else {
        eprintln!("probe: only http:// URLs are supported");
        return ExitCode::from(2);
    };
    let (authority, path) = rest.split_once('/').map_or((rest, "/".to_owned()), |(a, p)| (a, format!("/{p}")));
    let mut stream = match TcpStream::connect(authority) {
        Ok(s) => s,
        Err(err) => {
            eprintln!("probe: cannot connect to {authority}: {err}");
            return ExitCode::FAILURE;
        }
    };
    let request = format!("GET {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n");
    let mut response = String::new();
    if stream.write_all(request.as_bytes()).is_err() || stream.read_to_string(&mut response).is_err() {
        eprintln!("probe: the connection to {authority} failed");
        return ExitCode::FAILURE;
    }
    let ok = response.starts_with("HTTP/1.1 200") && response.contains(expected.as_str());
    println!("{}", response.lines().next().unwrap_or(""));
    if ok {
        println!("probe: {url} answered with {expected:?}");
        ExitCode::SUCCESS
    } else {
        eprintln!("probe: {url} did not answer 200 with {expected:?}:\n{response}");
        ExitCode::FAILURE
    }
}
