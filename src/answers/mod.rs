//! The answer sources of `roundtrip call`: for each input request a server sends, who answers
//! it ([`AnswerSources`]): an `--answer` ([`preset`]), a `--sampling-command`
//! ([`sampling_command`]), `--root` URIs, or the person at the terminal (`crate::terminal`),
//! and a clear error naming the key when none of them can.
//!
//! It knows requests only as `(key, method, params)`; [`handlers`] hands it the requests of
//! the client's rounds (modern `inputRequests`, or legacy server-to-client requests).

pub mod fit;
pub mod handlers;
pub mod method;
pub mod preset;
pub mod sampling_command;
pub mod sources;

pub use handlers::Answering;
pub use method::InputMethod;
pub use preset::{parse_preset, PresetAnswer, PresetAnswers, PresetError};
pub use sampling_command::{SamplingCommand, SamplingCommandError};
pub use sources::{AnswerError, AnswerSources};
