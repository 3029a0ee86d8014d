//! The three methods an input request may have, by wire name.

/// The method of an input request (2026-07-28 §2.1), or of a legacy server-to-client request
/// that asks the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputMethod {
    Elicitation,
    Sampling,
    Roots,
}

impl InputMethod {
    pub fn from_name(name: &str) -> Option<InputMethod> {
        match name {
            "elicitation/create" => Some(InputMethod::Elicitation),
            "sampling/createMessage" => Some(InputMethod::Sampling),
            "roots/list" => Some(InputMethod::Roots),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            InputMethod::Elicitation => "elicitation/create",
            InputMethod::Sampling => "sampling/createMessage",
            InputMethod::Roots => "roots/list",
        }
    }
}

impl std::fmt::Display for InputMethod {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for m in [
            InputMethod::Elicitation,
            InputMethod::Sampling,
            InputMethod::Roots,
        ] {
            assert_eq!(InputMethod::from_name(m.name()), Some(m));
        }
        assert_eq!(InputMethod::from_name("ping"), None);
    }
}
