//! `roundtrip answer-input KEY REQUEST` (hidden): one input request answered by the answer
//! sources `roundtrip call` uses, the answer printed on stdout as one line of JSON. It exists
//! so that the terminal form can be driven without a client, by a person trying a schema or
//! by the pseudo-terminal test (`tests/it/terminal.rs`).

use anyhow::Context as _;
use serde_json::Value;

use crate::answers::{AnswerSources, PresetAnswers, PresetError, SamplingCommand};
use crate::cli::{AnswerArgs, AnswerInputArgs};
use crate::terminal::Tty;

pub fn run(args: &AnswerInputArgs) -> anyhow::Result<()> {
    let request: Value = serde_json::from_str(&args.request).context("REQUEST is not JSON")?;
    let method = request
        .get("method")
        .and_then(Value::as_str)
        .context("REQUEST has no \"method\" string")?;
    let params = request.get("params").unwrap_or(&Value::Null);
    let answer = sources(&args.answers)?.answer(&args.key, method, params)?;
    println!("{answer}");
    Ok(())
}

/// The answer sources the flags describe; the person at this terminal is asked only when
/// stdin is one.
pub fn sources(args: &AnswerArgs) -> Result<AnswerSources<Tty>, PresetError> {
    let presets = PresetAnswers::new(args.answers.clone())?;
    let mut sources = AnswerSources::new(presets, Tty::if_stdin_is_terminal());
    if let Some(command) = &args.sampling_command {
        let mut command = SamplingCommand::new(command.clone());
        if let Some(timeout) = args.sampling_timeout {
            command.timeout = timeout;
        }
        sources = sources.with_sampling_command(command);
    }
    Ok(sources)
}
