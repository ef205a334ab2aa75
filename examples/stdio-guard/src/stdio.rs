//! The guard loop: the MCP client on this process's stdin/stdout, the server as a child
//! process, every line through the policy in between.
//!
//! Main design decision: one thread owns the policy and decides every message in the order
//! it arrived; two reader threads only frame lines and hand them over a channel. A client
//! message the policy answers (a denied `tools/call`) is answered on stdout and never written
//! to the child. Anything the guard cannot decide (the component trapped, the state file
//! failed) stops the guard and the server: fail closed, never forward unchecked.

use crate::line_reader::{Line, LineReader, MAX_LINE_BYTES};
use crate::persistent::PersistentPolicy;
use crate::{MessageContext, Transport, Verdict};
use anyhow::{Context, Result, anyhow};
use std::ffi::OsString;
use std::io::{BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::Duration;

/// How long the server may take to exit after the client closed its input.
pub const EXIT_GRACE: Duration = Duration::from_secs(5);

/// The guard's exit code when it stopped because it could not decide (fail closed).
pub const EXIT_POLICY_FAILED: i32 = 70;

enum Input {
    Client(Line),
    ClientEnd,
    Server(Line),
    ServerEnd,
}

/// Who the guard stands in front of.
pub struct Target {
    /// The server id the policy knows this server by.
    pub server_id: String,
    /// The session id of this connection (one client per process).
    pub session_id: String,
    /// The server command and its arguments.
    pub command: Vec<OsString>,
}

/// Runs the guard until the server exits; returns the server's exit code.
pub fn run(policy: &mut PersistentPolicy, target: &Target) -> Result<i32> {
    let (program, args) = target
        .command
        .split_first()
        .ok_or_else(|| anyhow!("no server command given after --"))?;
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("starting the MCP server {:?}", program))?;
    let child_stdin = child
        .stdin
        .take()
        .ok_or_else(|| anyhow!("the server's stdin is not piped"))?;
    let child_stdout = child
        .stdout
        .take()
        .ok_or_else(|| anyhow!("the server's stdout is not piped"))?;
    let (sender, inputs) = mpsc::channel();
    spawn_reader(
        std::io::stdin(),
        sender.clone(),
        Input::Client,
        Input::ClientEnd,
    );
    spawn_reader(child_stdout, sender, Input::Server, Input::ServerEnd);
    let ctx = MessageContext {
        server_id: target.server_id.clone(),
        session_id: Some(target.session_id.clone()),
        transport: Transport::Stdio,
        headers: Vec::new(),
    };
    let outcome = pump(policy, &ctx, &inputs, Some(child_stdin));
    match outcome {
        Ok(()) => Ok(wait_exit(&mut child)),
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            Err(e)
        }
    }
}

fn spawn_reader<R: Read + Send + 'static>(
    reader: R,
    sender: Sender<Input>,
    wrap: fn(Line) -> Input,
    end: Input,
) {
    std::thread::spawn(move || {
        let mut lines = LineReader::new(BufReader::new(reader), MAX_LINE_BYTES);
        while let Ok(Some(line)) = lines.next_line() {
            if sender.send(wrap(line)).is_err() {
                return;
            }
        }
        let _ = sender.send(end);
    });
}

/// Decides every line until the server's output ends.
fn pump(
    policy: &mut PersistentPolicy,
    ctx: &MessageContext,
    inputs: &Receiver<Input>,
    mut child_stdin: Option<ChildStdin>,
) -> Result<()> {
    let mut client_closed_at = None;
    loop {
        let input = match client_closed_at {
            None => inputs.recv().map_err(|_| RecvTimeoutError::Disconnected),
            Some(since) => {
                inputs.recv_timeout(EXIT_GRACE.saturating_sub(std::time::Instant::elapsed(&since)))
            }
        };
        match input {
            Ok(Input::Client(Line::Message(body))) => {
                match policy.call(|p| p.client_message(ctx, &body))? {
                    Verdict::Pass => to_server(&mut child_stdin, &body),
                    Verdict::Rewrite(bytes) => to_server(&mut child_stdin, &bytes),
                    Verdict::Reply(reply) => to_client(&reply.body)?,
                }
            }
            Ok(Input::Client(Line::TooLong(len))) => {
                let error = toolseal_core::wire::jsonrpc::error_response(
                    &serde_json::Value::Null,
                    toolseal_core::wire::jsonrpc::INVALID_REQUEST,
                    &format!(
                        "toolseal: a {len}-byte line is over the {MAX_LINE_BYTES}-byte limit; not forwarded"
                    ),
                );
                to_client(error.to_string().as_bytes())?;
            }
            Ok(Input::Server(Line::Message(body))) => {
                match policy.call(|p| p.server_message(ctx, &body))? {
                    Verdict::Pass => to_client(&body)?,
                    Verdict::Rewrite(bytes) => to_client(&bytes)?,
                    Verdict::Reply(reply) => to_server(&mut child_stdin, &reply.body),
                }
            }
            Ok(Input::Server(Line::TooLong(len))) => {
                eprintln!(
                    "toolseal-stdio: dropped a {len}-byte line from the server (over {MAX_LINE_BYTES} bytes)"
                );
            }
            Ok(Input::ClientEnd) => {
                // Closing the server's stdin is how the stdio transport asks it to exit.
                child_stdin = None;
                client_closed_at = Some(std::time::Instant::now());
            }
            Ok(Input::ServerEnd)
            | Err(RecvTimeoutError::Disconnected)
            | Err(RecvTimeoutError::Timeout) => {
                return Ok(());
            }
        }
    }
}

fn to_server(stdin: &mut Option<ChildStdin>, bytes: &[u8]) {
    let written = stdin.as_mut().map(|s| {
        s.write_all(bytes)
            .and_then(|()| s.write_all(b"\n"))
            .and_then(|()| s.flush())
    });
    if let Some(Err(e)) = written {
        // The server is gone; its end of output will stop the loop.
        eprintln!("toolseal-stdio: cannot write to the server: {e}");
        *stdin = None;
    }
}

fn to_client(bytes: &[u8]) -> Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush())
        .context("writing to the client (stdout)")
}

/// Waits for the server to exit (killing it after [`EXIT_GRACE`]); its exit code, or 1 when
/// it was killed by a signal.
fn wait_exit(child: &mut Child) -> i32 {
    let deadline = std::time::Instant::now() + EXIT_GRACE;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return status.code().unwrap_or(1),
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20))
            }
            _ => {
                let _ = child.kill();
                return child.wait().ok().and_then(|s| s.code()).unwrap_or(1);
            }
        }
    }
}
