//! A scripted [`Ask`] for unit tests: it answers from a list of steps, applies each question's
//! check as the terminal would (a refused answer is recorded with its reason and the next step
//! answers again), and keeps a transcript of everything asked and said, one line each:
//! `say: TEXT`, `KIND: LABEL [OPTIONS] help: HELP` and `refused LABEL: REASON`. In OPTIONS,
//! `>` marks the option under the cursor at first and `*` one selected at first; for text,
//! OPTIONS is the pre-filled value.

use std::collections::VecDeque;

use super::ask::{Ask, MultiQuestion, SelectQuestion, Stop, TextQuestion};

/// What the person does at a question.
#[derive(Debug, Clone)]
pub(crate) enum Step {
    /// Types this (replacing any pre-filled text) and presses Enter.
    Type(&'static str),
    /// Presses Enter: the pre-filled text, the option under the cursor, the pre-selection.
    Enter,
    /// Chooses the option with this label.
    Choose(&'static str),
    /// Selects exactly the options with these labels.
    Pick(Vec<&'static str>),
    Esc,
    CtrlC,
}

#[derive(Debug)]
pub(crate) struct Scripted {
    steps: VecDeque<Step>,
    transcript: Vec<String>,
}

impl Scripted {
    pub(crate) fn new(steps: Vec<Step>) -> Scripted {
        Scripted {
            steps: steps.into(),
            transcript: Vec::new(),
        }
    }

    pub(crate) fn lines(&self) -> impl Iterator<Item = &str> {
        self.transcript.iter().map(String::as_str)
    }

    /// Whether a line of the transcript contains `text`.
    pub(crate) fn saw(&self, text: &str) -> bool {
        self.lines().any(|l| l.contains(text))
    }

    /// How many lines of the transcript contain `text`.
    pub(crate) fn count(&self, text: &str) -> usize {
        self.lines().filter(|l| l.contains(text)).count()
    }

    pub(crate) fn assert_script_used(&self) {
        assert!(
            self.steps.is_empty(),
            "steps left over: {:?}\ntranscript: {:#?}",
            self.steps,
            self.transcript
        );
    }

    fn next(&mut self, label: &str) -> Result<Step, Stop> {
        match self.steps.pop_front() {
            Some(Step::Esc) => Err(Stop::Escaped),
            Some(Step::CtrlC) => Err(Stop::Interrupted),
            Some(step) => Ok(step),
            None => panic!(
                "no step left for '{label}'; transcript: {:#?}",
                self.transcript
            ),
        }
    }

    fn refused(&mut self, label: &str, reason: impl std::fmt::Display) {
        self.transcript.push(format!("refused {label}: {reason}"));
    }
}

fn index_of(options: &[String], label: &str) -> usize {
    options
        .iter()
        .position(|o| o == label)
        .unwrap_or_else(|| panic!("no option '{label}' in {options:?}"))
}

fn marked(options: &[String], mark: &str, marked: impl Fn(usize) -> bool) -> String {
    let shown: Vec<String> = options
        .iter()
        .enumerate()
        .map(|(i, o)| {
            if marked(i) {
                format!("{mark}{o}")
            } else {
                o.clone()
            }
        })
        .collect();
    shown.join("|")
}

impl Ask for Scripted {
    fn say(&mut self, text: &str) -> Result<(), Stop> {
        self.transcript.push(format!("say: {text}"));
        Ok(())
    }

    fn text(&mut self, q: &TextQuestion<'_>) -> Result<String, Stop> {
        let line = format!("text: {} [{}] help: {}", q.label, q.initial, q.help);
        self.transcript.push(line);
        loop {
            let typed = match self.next(q.label)? {
                Step::Type(text) => text.to_owned(),
                Step::Enter => q.initial.to_owned(),
                other => panic!("'{}' is a text question, the script has {other:?}", q.label),
            };
            match (q.check)(&typed) {
                Ok(()) => return Ok(typed),
                Err(reason) => self.refused(q.label, reason),
            }
        }
    }

    fn select(&mut self, q: &SelectQuestion<'_>) -> Result<usize, Stop> {
        let options = marked(q.options, ">", |i| i == q.start);
        let line = format!("select: {} [{options}] help: {}", q.label, q.help);
        self.transcript.push(line);
        match self.next(q.label)? {
            Step::Choose(label) => Ok(index_of(q.options, label)),
            Step::Enter => Ok(q.start),
            other => panic!("'{}' is a choice, the script has {other:?}", q.label),
        }
    }

    fn multi_select(&mut self, q: &MultiQuestion<'_>) -> Result<Vec<usize>, Stop> {
        let options = marked(q.options, "*", |i| q.selected.contains(&i));
        let line = format!("multi: {} [{options}] help: {}", q.label, q.help);
        self.transcript.push(line);
        loop {
            let mut picked = match self.next(q.label)? {
                Step::Pick(labels) => labels.iter().map(|l| index_of(q.options, l)).collect(),
                Step::Enter => q.selected.to_vec(),
                other => panic!("'{}' is a multi-select, the script has {other:?}", q.label),
            };
            picked.sort_unstable();
            match (q.check)(picked.len()) {
                Ok(()) => return Ok(picked),
                Err(reason) => self.refused(q.label, reason),
            }
        }
    }
}
