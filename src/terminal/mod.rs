//! The terminal half of the client: a person answers the input requests of a call.
//!
//! - [`elicit`] asks an `elicitation/create`: form mode field by field ([`form`]), URL mode
//!   as consent to visit a page ([`url`]). A schema the form cannot show is a
//!   [`SchemaError`], named, before anything is asked.
//! - [`type_reply`] lets the person write the reply to a `sampling/createMessage`.
//!
//! Both ask through the [`Ask`] trait: [`Tty`] is the real terminal (inquire), and the unit
//! tests answer from a script. This module knows nothing of transports, rounds or keys; the
//! answer sources of `roundtrip call` (`crate::answers`) decide when a person is asked at all.
//! Every call blocks until the person answers: run it on a thread that may block.

pub mod ask;
pub mod check;
pub mod display;
pub mod elicit;
pub mod form;
pub mod formats;
pub mod result;
pub mod sampling;
pub mod schema;
#[cfg(test)]
pub(crate) mod scripted;
pub mod tty;
pub mod url;

pub use ask::{Ask, Stop};
pub use elicit::{elicit, ElicitError};
pub use result::ElicitResult;
pub use sampling::type_reply;
pub use schema::{FormSchema, SchemaError};
pub use tty::Tty;
