//! A request's method, told apart once, when the request is parsed: routing, the envelope
//! checks, the rate limits, the audit record and the metrics all match on a [`Method`]
//! rather than compare its name again, and a catalog's custom methods may not take a name
//! the runtime knows.

use std::fmt;

/// Defines [`Method`] from one list of variants and their names, so that a name and its
/// variant cannot drift apart.
macro_rules! methods {
    ($($variant:ident => $name:literal,)+) => {
        /// A request's method: each method of the revisions served here (those 2026-07-28
        /// removed included, so they can be refused by kind) is a variant of its own; any
        /// other, a catalog's custom method or one nobody serves, is kept by its name.
        #[derive(Debug, Clone, PartialEq, Eq)]
        #[non_exhaustive]
        pub enum Method {
            $(#[doc = concat!("`", $name, "`.")] $variant,)+
            /// Any other method, by its name. Built from a name (`From`, or the parse), it
            /// never holds the name of a known method.
            Other(String),
        }

        impl Method {
            /// The known method named `name`, if it is one.
            fn known(name: &str) -> Option<Self> {
                Some(match name {
                    $($name => Self::$variant,)+
                    _ => return None,
                })
            }

            /// The method's name, as the client sent it.
            pub fn as_str(&self) -> &str {
                match self {
                    $(Self::$variant => $name,)+
                    Self::Other(name) => name,
                }
            }

            /// The name of a known method, `None` for any other: a label whose values are
            /// bounded whatever clients send.
            pub fn known_name(&self) -> Option<&'static str> {
                match self {
                    $(Self::$variant => Some($name),)+
                    Self::Other(_) => None,
                }
            }
        }
    };
}

methods! {
    ToolsCall => "tools/call",
    ToolsList => "tools/list",
    PromptsGet => "prompts/get",
    PromptsList => "prompts/list",
    ResourcesRead => "resources/read",
    ResourcesList => "resources/list",
    ResourcesTemplatesList => "resources/templates/list",
    ResourcesSubscribe => "resources/subscribe",
    ResourcesUnsubscribe => "resources/unsubscribe",
    CompletionComplete => "completion/complete",
    ServerDiscover => "server/discover",
    SubscriptionsListen => "subscriptions/listen",
    Initialize => "initialize",
    Ping => "ping",
    LoggingSetLevel => "logging/setLevel",
    TasksResult => "tasks/result",
    TasksList => "tasks/list",
}

impl Method {
    /// Whether `name` is the name of a known method (a variant of its own).
    pub fn is_known(name: &str) -> bool {
        Self::known(name).is_some()
    }

    /// Its name, owned: a known method's is copied, any other's given back.
    pub fn into_name(self) -> String {
        match self {
            Self::Other(name) => name,
            known => known.as_str().to_owned(),
        }
    }

    /// Whether it may answer input-required (SEP-2322): `tools/call`, `prompts/get` and
    /// `resources/read`.
    pub fn may_require_input(&self) -> bool {
        matches!(
            self,
            Self::ToolsCall | Self::PromptsGet | Self::ResourcesRead
        )
    }

    /// The params key naming what it targets: `name` for `tools/call` and `prompts/get`,
    /// `uri` for `resources/read`. It is what `Mcp-Name` mirrors and what sealed state binds.
    pub fn target_key(&self) -> Option<&'static str> {
        match self {
            Self::ToolsCall | Self::PromptsGet => Some("name"),
            Self::ResourcesRead => Some("uri"),
            _ => None,
        }
    }
}

impl From<&str> for Method {
    fn from(name: &str) -> Self {
        Self::known(name).unwrap_or_else(|| Self::Other(name.to_owned()))
    }
}

impl From<String> for Method {
    /// A known method drops the string; any other keeps it, uncopied.
    fn from(name: String) -> Self {
        Self::known(&name).unwrap_or(Self::Other(name))
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_name_is_its_own_variant_and_reads_back_the_same() {
        let known = [
            ("tools/call", Method::ToolsCall),
            ("tools/list", Method::ToolsList),
            ("prompts/get", Method::PromptsGet),
            ("prompts/list", Method::PromptsList),
            ("resources/read", Method::ResourcesRead),
            ("resources/list", Method::ResourcesList),
            ("resources/templates/list", Method::ResourcesTemplatesList),
            ("resources/subscribe", Method::ResourcesSubscribe),
            ("resources/unsubscribe", Method::ResourcesUnsubscribe),
            ("completion/complete", Method::CompletionComplete),
            ("server/discover", Method::ServerDiscover),
            ("subscriptions/listen", Method::SubscriptionsListen),
            ("initialize", Method::Initialize),
            ("ping", Method::Ping),
            ("logging/setLevel", Method::LoggingSetLevel),
            ("tasks/result", Method::TasksResult),
            ("tasks/list", Method::TasksList),
        ];
        for (name, variant) in known {
            let method = Method::from(name);
            assert_eq!(method, variant, "{name}");
            assert_eq!(method.as_str(), name);
            assert_eq!(method.known_name(), Some(name));
            assert!(Method::is_known(name), "{name}");
            assert_eq!(Method::from(name.to_owned()).into_name(), name);
        }
    }

    #[test]
    fn any_other_name_is_kept_as_sent() {
        let method = Method::from(String::from("acme/custom"));
        assert_eq!(method, Method::Other("acme/custom".into()));
        assert_eq!(method.as_str(), "acme/custom");
        assert_eq!(method.known_name(), None);
        assert!(!Method::is_known("acme/custom"));
        assert_eq!(method.into_name(), "acme/custom");
    }

    #[test]
    fn names_are_matched_exactly() {
        assert_eq!(
            Method::from("Tools/Call"),
            Method::Other("Tools/Call".into())
        );
        assert_eq!(
            Method::from("tools/call "),
            Method::Other("tools/call ".into())
        );
    }

    #[test]
    fn only_the_three_targeted_methods_may_require_input() {
        let may: Vec<_> = [
            "tools/call",
            "prompts/get",
            "resources/read",
            "tools/list",
            "x/y",
        ]
        .into_iter()
        .filter(|m| Method::from(*m).may_require_input())
        .collect();
        assert_eq!(may, ["tools/call", "prompts/get", "resources/read"]);
    }

    #[test]
    fn the_target_key_is_name_for_tools_and_prompts_and_uri_for_resources() {
        assert_eq!(Method::ToolsCall.target_key(), Some("name"));
        assert_eq!(Method::PromptsGet.target_key(), Some("name"));
        assert_eq!(Method::ResourcesRead.target_key(), Some("uri"));
        assert_eq!(Method::ToolsList.target_key(), None);
    }
}
