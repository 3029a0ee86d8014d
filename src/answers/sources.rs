//! Where the answer to each input request of `roundtrip call` comes from, in order:
//!
//! 1. its `--answer KEY=JSON`, once, checked against the request ([`super::fit`]);
//! 2. for sampling, the `--sampling-command`; for roots, the `--root` URIs;
//! 3. the person at the terminal: an elicitation form or URL consent, or a typed sampling
//!    reply;
//! 4. nobody: an error naming the key, at once. A command whose stdin is not a terminal is
//!    scripted, and never waits for keys.
//!
//! A server that asks a key again after its `--answer` was sent goes to step 2 or 3, so a
//! rejected answer is not sent again and again.

use serde_json::{json, Map, Value};

use super::fit::{self, Misfit};
use super::method::InputMethod;
use super::preset::PresetAnswers;
use super::sampling_command::{SamplingCommand, SamplingCommandError};
use crate::terminal::{self, Ask, ElicitError, Stop};

/// Why an input request has no answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AnswerError {
    #[error(
        "input request '{key}' ({method}) has no --answer, and stdin is not a terminal to ask on"
    )]
    Unanswered { key: String, method: InputMethod },
    #[error("input request '{key}' was asked again after its --answer was sent, and stdin is not a terminal to ask on")]
    AskedAgain { key: String },
    #[error("input request '{key}' has method '{method}'; known: elicitation/create, sampling/createMessage, roots/list")]
    UnknownMethod { key: String, method: String },
    #[error("--answer {key} does not fit its {method} request: {misfit}")]
    Misfit {
        key: String,
        method: InputMethod,
        misfit: Misfit,
    },
    #[error("input request '{key}': {problem}")]
    Elicit { key: String, problem: ElicitError },
    #[error("sampling request '{key}': {problem}")]
    SamplingCommand {
        key: String,
        problem: SamplingCommandError,
    },
    #[error("sampling request '{key}' was refused at the terminal")]
    Refused { key: String },
    #[error("input request '{key}': {problem}")]
    Stopped { key: String, problem: Stop },
}

/// The answer sources of one command. `A` is who asks the person: [`terminal::Tty`] for
/// real, `None` when stdin is not a terminal.
#[derive(Debug)]
pub struct AnswerSources<A> {
    presets: PresetAnswers,
    /// Keys whose `--answer` has been sent.
    used: Vec<String>,
    sampling_command: Option<SamplingCommand>,
    roots: Option<Vec<String>>,
    person: Option<A>,
}

impl<A: Ask> AnswerSources<A> {
    pub fn new(presets: PresetAnswers, person: Option<A>) -> AnswerSources<A> {
        AnswerSources {
            presets,
            used: Vec::new(),
            sampling_command: None,
            roots: None,
            person,
        }
    }

    pub fn with_sampling_command(mut self, command: SamplingCommand) -> AnswerSources<A> {
        self.sampling_command = Some(command);
        self
    }

    /// Answers `roots/list` with these URIs (`--root`).
    pub fn with_roots(mut self, uris: Vec<String>) -> AnswerSources<A> {
        self.roots = Some(uris);
        self
    }

    /// Can requests of `method` get an answer here, so that a client may declare the
    /// capability? Elicitations always can: the person is asked, or the call fails naming the
    /// key. Sampling needs a command, a person or a preset `CreateMessageResult`; roots need
    /// `--root` URIs or a preset `ListRootsResult` (a person is never asked for roots).
    pub fn can_answer(&self, method: InputMethod) -> bool {
        match method {
            InputMethod::Elicitation => true,
            InputMethod::Sampling => {
                self.sampling_command.is_some()
                    || self.person.is_some()
                    || self.presets.any_with("model")
            }
            InputMethod::Roots => self.roots.is_some() || self.presets.any_with("roots"),
        }
    }

    /// The answer to the input request under `key`: the JSON object that goes into
    /// `inputResponses[key]`. Blocks while a person is asked; requests of one round are
    /// answered one after the other (one terminal, one question at a time).
    pub fn answer(
        &mut self,
        key: &str,
        method: &str,
        params: &Value,
    ) -> Result<Value, AnswerError> {
        let method = InputMethod::from_name(method).ok_or_else(|| AnswerError::UnknownMethod {
            key: key.to_owned(),
            method: method.to_owned(),
        })?;
        if let Some(answer) = self.presets.take(key) {
            return self.preset(key, method, params, answer);
        }
        match method {
            InputMethod::Sampling => {
                if let Some(command) = &self.sampling_command {
                    let request = json!({"method": method.name(), "params": params});
                    return command
                        .run(&request)
                        .map_err(|problem| AnswerError::SamplingCommand {
                            key: key.to_owned(),
                            problem,
                        });
                }
            }
            InputMethod::Roots => {
                if let Some(uris) = &self.roots {
                    let roots: Vec<Value> = uris.iter().map(|uri| json!({"uri": uri})).collect();
                    return Ok(json!({"roots": roots}));
                }
            }
            InputMethod::Elicitation => {}
        }
        self.ask_person(key, method, params)
    }

    fn preset(
        &mut self,
        key: &str,
        method: InputMethod,
        params: &Value,
        answer: Map<String, Value>,
    ) -> Result<Value, AnswerError> {
        fit::check(method, params, &answer).map_err(|misfit| AnswerError::Misfit {
            key: key.to_owned(),
            method,
            misfit,
        })?;
        self.used.push(key.to_owned());
        Ok(Value::Object(answer))
    }

    fn ask_person(
        &mut self,
        key: &str,
        method: InputMethod,
        params: &Value,
    ) -> Result<Value, AnswerError> {
        let key_owned = || key.to_owned();
        let Some(person) = self.person.as_mut() else {
            return Err(if self.used.iter().any(|k| k == key) {
                AnswerError::AskedAgain { key: key_owned() }
            } else {
                AnswerError::Unanswered {
                    key: key_owned(),
                    method,
                }
            });
        };
        match method {
            InputMethod::Elicitation => terminal::elicit(person, params)
                .map(|result| result.to_json())
                .map_err(|problem| AnswerError::Elicit {
                    key: key_owned(),
                    problem,
                }),
            InputMethod::Sampling => {
                terminal::type_reply(person, params).map_err(|stop| match stop {
                    Stop::Escaped => AnswerError::Refused { key: key_owned() },
                    problem => AnswerError::Stopped {
                        key: key_owned(),
                        problem,
                    },
                })
            }
            // Which directories a server may see is not asked of a person mid-call.
            InputMethod::Roots => Err(AnswerError::Unanswered {
                key: key_owned(),
                method,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::answers::preset::parse_preset;
    use crate::terminal::scripted::{Scripted, Step};

    fn presets(args: &[&str]) -> PresetAnswers {
        let parsed = args
            .iter()
            .map(|a| parse_preset(a).expect("a preset"))
            .collect();
        PresetAnswers::new(parsed).expect("presets")
    }

    fn form() -> Value {
        json!({"message": "Name?", "requestedSchema": {"type": "object", "required": ["name"],
            "properties": {"name": {"type": "string"}}}})
    }

    fn nobody(args: &[&str]) -> AnswerSources<Scripted> {
        AnswerSources::new(presets(args), None)
    }

    const ADA: &str = r#"user={"action":"accept","content":{"name":"Ada"}}"#;

    fn accepted_ada() -> Value {
        json!({"action": "accept", "content": {"name": "Ada"}})
    }

    #[test]
    fn a_preset_answers_its_key() {
        let mut sources = nobody(&[ADA]);
        let answer = sources
            .answer("user", "elicitation/create", &form())
            .expect("an answer");
        assert_eq!(answer, accepted_ada());
    }

    #[test]
    fn without_a_terminal_an_unanswered_request_fails_naming_its_key() {
        let error = nobody(&[])
            .answer("user", "elicitation/create", &form())
            .expect_err("none");
        assert_eq!(
            error.to_string(),
            "input request 'user' (elicitation/create) has no --answer, and stdin is not a \
             terminal to ask on"
        );
    }

    #[test]
    fn a_key_asked_again_after_its_preset_fails_without_a_terminal() {
        let mut sources = nobody(&[ADA]);
        sources
            .answer("user", "elicitation/create", &form())
            .expect("first round");
        let error = sources
            .answer("user", "elicitation/create", &form())
            .expect_err("again");
        assert!(matches!(error, AnswerError::AskedAgain { key } if key == "user"));
    }

    #[test]
    fn a_key_asked_again_after_its_preset_goes_to_the_person() {
        let person = Scripted::new(vec![Step::Choose("Decline")]);
        let mut sources = AnswerSources::new(presets(&[ADA]), Some(person));
        sources
            .answer("user", "elicitation/create", &form())
            .expect("first round");
        let again = sources
            .answer("user", "elicitation/create", &form())
            .expect("asked");
        assert_eq!(again, json!({"action": "decline"}));
    }

    #[test]
    fn a_preset_that_does_not_fit_is_an_error_naming_key_and_field() {
        let mut sources = nobody(&[r#"user={"action":"accept","content":{"name":7}}"#]);
        let error = sources
            .answer("user", "elicitation/create", &form())
            .expect_err("misfit");
        assert_eq!(
            error.to_string(),
            "--answer user does not fit its elicitation/create request: content field 'name': \
             expected a string"
        );
    }

    #[test]
    fn an_elicitation_without_a_preset_is_asked_of_the_person() {
        let person = Scripted::new(vec![
            Step::Choose("Answer"),
            Step::Type("Ada"),
            Step::Choose("Send"),
        ]);
        let mut sources = AnswerSources::new(PresetAnswers::default(), Some(person));
        let answer = sources
            .answer("user", "elicitation/create", &form())
            .expect("an answer");
        assert_eq!(answer, accepted_ada());
    }

    #[test]
    fn sampling_goes_to_the_sampling_command_before_the_person() {
        let reply = r#"{"role":"assistant","content":{"type":"text","text":"hi"},"model":"m"}"#;
        let command = SamplingCommand::new(format!("echo '{reply}'"));
        let mut sources = AnswerSources::new(PresetAnswers::default(), Some(Scripted::new(vec![])))
            .with_sampling_command(command);
        let answer = sources
            .answer("llm", "sampling/createMessage", &json!({}))
            .expect("a reply");
        assert_eq!(answer["model"], "m");
    }

    #[test]
    fn sampling_without_a_command_is_typed_by_the_person() {
        let person = Scripted::new(vec![Step::Type("Hello")]);
        let mut sources = AnswerSources::new(PresetAnswers::default(), Some(person));
        let answer = sources
            .answer("llm", "sampling/createMessage", &json!({}))
            .expect("a reply");
        assert_eq!(answer["content"], json!({"type": "text", "text": "Hello"}));
    }

    #[test]
    fn sampling_refused_with_esc_is_an_error() {
        let person = Scripted::new(vec![Step::Esc]);
        let mut sources = AnswerSources::new(PresetAnswers::default(), Some(person));
        let error = sources
            .answer("llm", "sampling/createMessage", &json!({}))
            .expect_err("esc");
        assert!(matches!(error, AnswerError::Refused { key } if key == "llm"));
    }

    #[test]
    fn roots_are_answered_from_the_root_uris() {
        let mut sources = nobody(&[]).with_roots(vec!["file:///work".into()]);
        let answer = sources
            .answer("roots", "roots/list", &Value::Null)
            .expect("roots");
        assert_eq!(answer, json!({"roots": [{"uri": "file:///work"}]}));
    }

    #[test]
    fn sampling_and_roots_are_declared_only_when_something_answers_them() {
        let bare = nobody(&[]);
        assert!(bare.can_answer(InputMethod::Elicitation));
        assert!(!bare.can_answer(InputMethod::Sampling));
        assert!(!bare.can_answer(InputMethod::Roots));
        let presets = nobody(&[
            r#"llm={"role":"assistant","content":{"type":"text","text":"hi"},"model":"m"}"#,
            r#"r={"roots":[]}"#,
        ]);
        assert!(presets.can_answer(InputMethod::Sampling));
        assert!(presets.can_answer(InputMethod::Roots));
        let person = AnswerSources::new(PresetAnswers::default(), Some(Scripted::new(vec![])));
        assert!(person.can_answer(InputMethod::Sampling));
        assert!(!person.can_answer(InputMethod::Roots));
    }

    #[test]
    fn an_unknown_method_is_an_error() {
        let error = nobody(&[])
            .answer("k", "ping", &Value::Null)
            .expect_err("unknown");
        assert!(matches!(error, AnswerError::UnknownMethod { method, .. } if method == "ping"));
    }

    #[test]
    fn a_form_the_terminal_cannot_show_is_an_error_naming_the_key() {
        let params = json!({"message": "m", "requestedSchema": {"type": "object",
            "properties": {"a": {"type": "object"}}}});
        let mut sources = AnswerSources::new(PresetAnswers::default(), Some(Scripted::new(vec![])));
        let error = sources
            .answer("k", "elicitation/create", &params)
            .expect_err("schema");
        assert!(error
            .to_string()
            .starts_with("input request 'k': the form cannot be shown: "));
    }
}
