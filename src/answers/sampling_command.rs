//! `--sampling-command CMD`: a program that answers sampling requests, such as a script around
//! a model's API. CMD runs through `sh -c`, gets the request on stdin as one JSON line,
//! `{"method":"sampling/createMessage","params":{...}}`, and prints the `CreateMessageResult`
//! on stdout; its stderr is the user's. A non-zero exit, no answer within the timeout (the
//! shell is then killed), or output that is not a `CreateMessageResult` is an error.
//!
//! Killing the shell ends a simple command (`sh -c` replaces itself with it); a pipeline's
//! other processes may outlive it, and their output is no longer read.

use std::io::{Read, Write};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::fit::{self, Misfit};

/// How long the command may take, unless `--sampling-timeout` says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// More output than this is not a reply but a runaway.
const MAX_OUTPUT: u64 = 16 << 20;
/// How often a command that closed its stdout is checked for having exited.
const EXIT_POLL: Duration = Duration::from_millis(10);

#[derive(Debug, Clone)]
pub struct SamplingCommand {
    pub command: String,
    pub timeout: Duration,
}

/// Why the command gave no answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SamplingCommandError {
    #[error("--sampling-command `{command}` could not be started: {problem}")]
    Spawn {
        command: String,
        problem: std::io::Error,
    },
    #[error("--sampling-command `{command}` exited with {status}")]
    Failed { command: String, status: ExitStatus },
    #[error("--sampling-command `{command}` did not finish within {timeout:?}, and was killed")]
    TimedOut { command: String, timeout: Duration },
    #[error("--sampling-command `{command}`'s output could not be read: {problem}")]
    Read {
        command: String,
        problem: std::io::Error,
    },
    #[error("--sampling-command `{command}` printed more than {MAX_OUTPUT} bytes")]
    TooLong { command: String },
    #[error("--sampling-command `{command}` did not print a JSON object: {problem}")]
    NotJson {
        command: String,
        problem: serde_json::Error,
    },
    #[error("--sampling-command `{command}` printed no CreateMessageResult: {misfit}")]
    NotAResult { command: String, misfit: Misfit },
}

impl SamplingCommand {
    pub fn new(command: impl Into<String>) -> SamplingCommand {
        SamplingCommand {
            command: command.into(),
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// Runs the command on `request` (`{"method": ..., "params": ...}`); its reply.
    /// Blocks until the command ends or its time is up.
    pub fn run(&self, request: &Value) -> Result<Value, SamplingCommandError> {
        let command = || self.command.clone();
        let deadline = Instant::now() + self.timeout;
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(&self.command)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|problem| SamplingCommandError::Spawn {
                command: command(),
                problem,
            })?;
        feed(&mut child, request);
        let output = read_until(&mut child, deadline);
        let Some(output) = output else {
            return Err(self.killed(&mut child));
        };
        let status = match wait_until(&mut child, deadline) {
            Some(status) => status,
            None => return Err(self.killed(&mut child)),
        };
        if !status.success() {
            return Err(SamplingCommandError::Failed {
                command: command(),
                status,
            });
        }
        let output = output.map_err(|problem| SamplingCommandError::Read {
            command: command(),
            problem,
        })?;
        if output.len() as u64 > MAX_OUTPUT {
            return Err(SamplingCommandError::TooLong { command: command() });
        }
        let reply = serde_json::from_slice::<serde_json::Map<String, Value>>(&output).map_err(
            |problem| SamplingCommandError::NotJson {
                command: command(),
                problem,
            },
        )?;
        fit::sampling(&reply).map_err(|misfit| SamplingCommandError::NotAResult {
            command: command(),
            misfit,
        })?;
        Ok(Value::Object(reply))
    }

    fn killed(&self, child: &mut Child) -> SamplingCommandError {
        // Already gone is fine: either way it will not answer.
        let _ = child.kill();
        let _ = child.wait();
        SamplingCommandError::TimedOut {
            command: self.command.clone(),
            timeout: self.timeout,
        }
    }
}

/// Writes the request on a thread of its own (a command that prints before it reads must not
/// block on a full pipe), then closes stdin. A command that never reads it is not an error.
fn feed(child: &mut Child, request: &Value) {
    let mut line = request.to_string();
    line.push('\n');
    if let Some(mut stdin) = child.stdin.take() {
        thread::spawn(move || {
            let _ = stdin.write_all(line.as_bytes());
        });
    }
}

/// All of stdout (at most one byte past the limit), or `None` when the deadline passes first.
fn read_until(child: &mut Child, deadline: Instant) -> Option<std::io::Result<Vec<u8>>> {
    let Some(stdout) = child.stdout.take() else {
        return Some(Ok(Vec::new()));
    };
    let (sent, received) = mpsc::channel();
    thread::spawn(move || {
        let mut output = Vec::new();
        let read = stdout.take(MAX_OUTPUT + 1).read_to_end(&mut output);
        let _ = sent.send(read.map(|_| output));
    });
    received
        .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        .ok()
}

fn wait_until(child: &mut Child, deadline: Instant) -> Option<ExitStatus> {
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) if Instant::now() < deadline => thread::sleep(EXIT_POLL),
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request() -> Value {
        json!({"method": "sampling/createMessage", "params": {"maxTokens": 5, "messages": []}})
    }

    const REPLY: &str =
        r#"{"role":"assistant","content":{"type":"text","text":"hi"},"model":"script"}"#;

    #[test]
    fn the_command_s_json_is_the_reply() {
        let reply = SamplingCommand::new(format!("cat >/dev/null; echo '{REPLY}'"))
            .run(&request())
            .expect("a reply");
        assert_eq!(reply["content"]["text"], "hi");
    }

    #[test]
    fn the_request_arrives_on_stdin_as_one_json_line() {
        // The command answers with the request's own maxTokens, read from stdin.
        let script = r#"read -r line; n=$(printf '%s' "$line" | sed 's/.*"maxTokens":\([0-9]*\).*/\1/'); printf '{"role":"assistant","content":{"type":"text","text":"%s"},"model":"m"}' "$n""#;
        let reply = SamplingCommand::new(script)
            .run(&request())
            .expect("a reply");
        assert_eq!(reply["content"]["text"], "5");
    }

    #[test]
    fn a_non_zero_exit_is_an_error_with_the_status() {
        let error = SamplingCommand::new("exit 3")
            .run(&request())
            .expect_err("a failure");
        assert!(
            matches!(error, SamplingCommandError::Failed { .. }),
            "{error:?}"
        );
        assert!(
            error.to_string().ends_with("exited with exit status: 3"),
            "{error}"
        );
    }

    #[test]
    fn a_command_over_its_time_is_killed_and_an_error() {
        let mut command = SamplingCommand::new("sleep 30");
        command.timeout = Duration::from_millis(200);
        let started = Instant::now();
        let error = command.run(&request()).expect_err("a timeout");
        assert!(
            matches!(error, SamplingCommandError::TimedOut { .. }),
            "{error:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn output_that_is_not_json_is_an_error() {
        let error = SamplingCommand::new("echo hello")
            .run(&request())
            .expect_err("not JSON");
        assert!(
            matches!(error, SamplingCommandError::NotJson { .. }),
            "{error:?}"
        );
    }

    #[test]
    fn json_that_is_not_a_create_message_result_is_an_error() {
        let error = SamplingCommand::new(r#"echo '{"text":"hi"}'"#)
            .run(&request())
            .expect_err("not a result");
        assert!(
            matches!(
                error,
                SamplingCommandError::NotAResult {
                    misfit: Misfit::NotAMessage,
                    ..
                }
            ),
            "{error:?}"
        );
    }
}
