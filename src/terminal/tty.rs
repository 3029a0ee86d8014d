//! [`Ask`] on the real terminal, with `inquire`. Prompts are drawn on stderr (inquire's
//! crossterm back-end writes there and reads keys from the terminal), so stdout stays for the
//! command's own output. Esc is [`Stop::Escaped`] and Ctrl-C [`Stop::Interrupted`] in every
//! prompt; inquire leaves the terminal as it found it in both cases.

use std::io::{IsTerminal, Write};

use inquire::list_option::ListOption;
use inquire::validator::Validation;
use inquire::InquireError;

use super::ask::{Ask, MultiQuestion, SelectQuestion, Stop, TextQuestion};
use super::check::Invalid;

/// The terminal the command runs in.
#[derive(Debug)]
pub struct Tty(());

impl Tty {
    /// The terminal, when stdin is one. Otherwise nobody can be asked: crossterm would still
    /// find the controlling terminal through `/dev/tty`, but a command whose input is piped is
    /// being scripted, and must fail rather than wait for keys nobody will press.
    pub fn if_stdin_is_terminal() -> Option<Tty> {
        std::io::stdin().is_terminal().then_some(Tty(()))
    }
}

impl Ask for Tty {
    fn say(&mut self, text: &str) -> Result<(), Stop> {
        writeln!(std::io::stderr(), "{text}").map_err(Stop::Terminal)
    }

    fn text(&mut self, q: &TextQuestion<'_>) -> Result<String, Stop> {
        let check = q.check.clone();
        inquire::Text::new(q.label)
            .with_help_message(q.help)
            .with_initial_value(q.initial)
            .with_validator(move |typed: &str| Ok(validation(check(typed))))
            .prompt()
            .map_err(stop)
    }

    fn select(&mut self, q: &SelectQuestion<'_>) -> Result<usize, Stop> {
        inquire::Select::new(q.label, q.options.to_vec())
            .with_help_message(q.help)
            .with_starting_cursor(q.start)
            .raw_prompt()
            .map(|picked| picked.index)
            .map_err(stop)
    }

    fn multi_select(&mut self, q: &MultiQuestion<'_>) -> Result<Vec<usize>, Stop> {
        let check = q.check.clone();
        inquire::MultiSelect::new(q.label, q.options.to_vec())
            .with_help_message(q.help)
            .with_default(q.selected)
            .with_validator(move |picked: &[ListOption<&String>]| {
                Ok(validation(check(picked.len())))
            })
            .raw_prompt()
            .map(|picked| picked.into_iter().map(|o| o.index).collect())
            .map_err(stop)
    }
}

fn validation(checked: Result<(), Invalid>) -> Validation {
    match checked {
        Ok(()) => Validation::Valid,
        Err(reason) => Validation::Invalid(reason.into()),
    }
}

fn stop(error: InquireError) -> Stop {
    match error {
        InquireError::OperationCanceled => Stop::Escaped,
        InquireError::OperationInterrupted => Stop::Interrupted,
        InquireError::IO(e) => Stop::Terminal(e),
        other => Stop::Terminal(std::io::Error::other(other)),
    }
}
