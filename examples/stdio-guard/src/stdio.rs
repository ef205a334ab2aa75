//! The guard loop: the MCP client on this process's stdin/stdout, the server as a child
//! process, every line through the policy in between.
//!
//! Main design decision: one thread owns the policy and decides every message in the order
//! it arrived; two reader threads only frame lines and hand them over a channel. A client
//! message the policy answers (a denied `tools/call`) is answered on stdout and never written
//! to the child. Anything the guard cannot decide (the component trapped, the state file
//! failed) stops the guard and the server: fail closed, never forward unchecked. With a
//! fleet store, the same thread ticks the component between messages (the channel's wait is
//! bounded by the next tick), so no thread of its own ever touches the policy.

use crate::line_reader::{Line, LineReader, MAX_LINE_BYTES};
use crate::persistent::PersistentPolicy;
use crate::{MessageContext, Transport, Verdict};
use anyhow::{Context, Result, anyhow};
use std::ffi::OsString;
use std::io::{BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

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
    // The first tick reads the fleet store at once (and says whether there is one at all).
    let outcome = tick(policy, Instant::now())
        .and_then(|next_tick| pump(policy, &ctx, &inputs, Some(child_stdin), next_tick));
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

/// The fleet store's background work when it is due; when the next is (`None`: no store).
fn tick(policy: &mut PersistentPolicy, due: Instant) -> Result<Option<Instant>> {
    if Instant::now() < due {
        return Ok(Some(due));
    }
    let next = policy.call(|p| p.tick())?;
    Ok(next.map(|ms| Instant::now() + Duration::from_millis(ms.into())))
}

/// Decides every line until the server's output ends, ticking the fleet store when due.
fn pump(
    policy: &mut PersistentPolicy,
    ctx: &MessageContext,
    inputs: &Receiver<Input>,
    mut child_stdin: Option<ChildStdin>,
    mut next_tick: Option<Instant>,
) -> Result<()> {
    let mut client_closed_at: Option<Instant> = None;
    loop {
        if let Some(due) = next_tick {
            next_tick = tick(policy, due)?;
        }
        let exit_at = client_closed_at.map(|since| since + EXIT_GRACE);
        let wake = match (next_tick, exit_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let input = match wake {
            None => inputs.recv().map_err(|_| RecvTimeoutError::Disconnected),
            Some(at) => inputs.recv_timeout(at.saturating_duration_since(Instant::now())),
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
                    // A message dropped (an answer to no waiting request): no line at all.
                    Verdict::Rewrite(bytes) if bytes.is_empty() => {}
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
                client_closed_at = Some(Instant::now());
            }
            // A tick is due (done at the top of the loop), or the server's grace is over.
            Err(RecvTimeoutError::Timeout) if exit_at.is_none_or(|at| Instant::now() < at) => {}
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
