//! The seam between a form and the terminal: four kinds of question, asked by whatever
//! implements [`Ask`]. [`super::tty::Tty`] asks them with `inquire`; the unit tests answer
//! them from a script. Everything a form decides (which question, which options, what an
//! answer means, what goes into `content`) happens above this trait, so the tests see it all.

use std::sync::Arc;

use super::check::Invalid;

/// Decides whether typed text is acceptable; its error is the reason shown.
pub type TextCheck = Arc<dyn Fn(&str) -> Result<(), Invalid> + Send + Sync>;
/// Decides whether so many selected options are acceptable.
pub type CountCheck = Arc<dyn Fn(usize) -> Result<(), Invalid> + Send + Sync>;

/// One line of text. The asker returns only text that `check` accepts: it shows the reason
/// of each refusal and asks again.
pub struct TextQuestion<'a> {
    pub label: &'a str,
    pub help: &'a str,
    /// Pre-filled, editable.
    pub initial: &'a str,
    pub check: TextCheck,
}

/// One of `options`; the answer is its index.
pub struct SelectQuestion<'a> {
    pub label: &'a str,
    pub help: &'a str,
    pub options: &'a [String],
    /// The option under the cursor at first.
    pub start: usize,
}

/// Any of `options`; the answer is their indices, in order. As for text, only a selection
/// whose size `check` accepts is returned.
pub struct MultiQuestion<'a> {
    pub label: &'a str,
    pub help: &'a str,
    pub options: &'a [String],
    /// Selected at first.
    pub selected: &'a [usize],
    pub check: CountCheck,
}

/// Why a question got no answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Stop {
    /// Esc: the person cancels what is being asked (a form answers `cancel`).
    #[error("cancelled with Esc")]
    Escaped,
    /// Ctrl-C: the person wants the whole command to stop.
    #[error("interrupted with Ctrl-C")]
    Interrupted,
    #[error("the terminal failed: {0}")]
    Terminal(#[source] std::io::Error),
}

/// Asks a person.
pub trait Ask {
    /// Shows text that is not a question (the server's message, a summary).
    fn say(&mut self, text: &str) -> Result<(), Stop>;
    fn text(&mut self, question: &TextQuestion<'_>) -> Result<String, Stop>;
    fn select(&mut self, question: &SelectQuestion<'_>) -> Result<usize, Stop>;
    fn multi_select(&mut self, question: &MultiQuestion<'_>) -> Result<Vec<usize>, Stop>;
}
