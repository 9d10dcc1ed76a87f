//! Serves the profile API on 127.0.0.1:<port> (`--port`, default 4180).

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let port = args
        .windows(2)
        .find(|w| w[0] == "--port")
        .and_then(|w| w[1].parse::<u16>().ok())
        .unwrap_or(4180);
    let run_id = std::env::var("PROOFGRAPH_RUN_ID").unwrap_or_default();
    let listener = TcpListener::bind(("127.0.0.1", port))?;
    eprintln!("profile-api listening on 127.0.0.1:{port}");
    for stream in listener.incoming() {
        let mut stream = match stream {
            Ok(s) => s,
            Err(_) => continue,
        };
        let mut reader = BufReader::new(&stream);
        let mut line = String::new();
        if reader.read_line(&mut line).is_err() {
            continue;
        }
        // Read the rest of the head: closing a socket with unread bytes
        // resets the connection, and a browser may then lose the answer.
        let mut header = String::new();
        while reader.read_line(&mut header).is_ok_and(|n| n > 0) && header.trim_end() != "" {
            header.clear();
        }
        let path = line.split_whitespace().nth(1).unwrap_or("/");
        let answer = profile_api::route(path, &run_id);
        let mut head = format!("HTTP/1.1 {} X\r\nContent-Length: {}\r\nConnection: close\r\n", answer.status, answer.body.len());
        for (name, value) in &answer.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        let _ = stream.write_all(head.as_bytes());
        let _ = stream.write_all(answer.body.as_bytes());
    }
    Ok(())
}
