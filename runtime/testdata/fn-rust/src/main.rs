//! The example function in Rust: the platform's function contract is CGI
//! over WASI (runtime/README.md). Build with
//! `rustc --edition 2021 -O --target wasm32-wasip1 src/main.rs -o fn.wasm`
//! (needs the wasm32-wasip1 standard library: `rustup target add wasm32-wasip1`).
use std::env;
use std::io::{self, Read, Write};

fn reply(status: u16, body: &str) {
    let mut out = io::stdout();
    let _ = write!(out, "Status: {}\r\nContent-Type: text/plain\r\n\r\n{}", status, body);
}

fn main() {
    let path = env::var("PATH_INFO").unwrap_or_default();
    let query = env::var("QUERY_STRING").unwrap_or_default();
    match path.as_str() {
        "/hello" => {
            let project = env::var("SERVICE_PROJECT_ID").unwrap_or_default();
            reply(200, &format!("hello from {}\n", project));
        }
        "/env" => {
            // k=NAME (names are plain identifiers: no percent-decoding needed)
            let key = query
                .split('&')
                .find_map(|kv| kv.strip_prefix("k="))
                .unwrap_or("");
            match env::var(key) {
                Ok(v) => reply(200, &v),
                Err(_) => reply(404, "unset\n"),
            }
        }
        "/echo" => {
            let mut body = String::new();
            let _ = io::stdin().read_to_string(&mut body);
            let method = env::var("REQUEST_METHOD").unwrap_or_default();
            let test = env::var("HTTP_X_TEST").unwrap_or_default();
            let mut out = io::stdout();
            let _ = write!(
                out,
                "Status: 201 Created\r\nContent-Type: text/plain\r\nX-Method: {}\r\nX-Test: {}\r\n\r\n{}",
                method, test, body
            );
        }
        _ => reply(404, &format!("no route {}\n", path.trim_start_matches('/'))),
    }
}
