//! Who is calling, and what they may see: the [`Principal`] authentication establishes, with
//! its [`Grants`].

use std::collections::BTreeSet;
use std::sync::Arc;

/// The id of [`Principal::anonymous`].
pub(crate) const ANONYMOUS: &str = "anonymous";

/// Who is calling, as established by authentication, and what they may see. Sealed state is
/// bound to the id; legacy sessions belong to it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Principal {
    id: Arc<str>,
    grants: Grants,
}

impl Principal {
    /// A principal that may see everything its tenant serves.
    pub fn new(id: impl Into<Arc<str>>) -> Self {
        Self::with_grants(id, Grants::All)
    }

    /// A principal limited to `grants`.
    pub fn with_grants(id: impl Into<Arc<str>>, grants: Grants) -> Self {
        Self {
            id: id.into(),
            grants,
        }
    }

    /// The caller of an anonymous tenant: every anonymous caller of a tenant is this one.
    /// Its id is made once per thread, not once per request: not once per process either, so
    /// that the workers do not all count its clones on one cache line.
    pub fn anonymous() -> Self {
        thread_local! {
            static ID: Arc<str> = Arc::from(ANONYMOUS);
        }
        Self::new(ID.with(Arc::clone))
    }

    /// The stable id: what sealed state and legacy sessions are bound to.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The id, shared.
    pub fn id_arc(&self) -> Arc<str> {
        self.id.clone()
    }

    /// What this principal may see.
    pub fn grants(&self) -> &Grants {
        &self.grants
    }

    /// Whether this is the same caller as `other`, whatever either may see now: grants can
    /// change while the caller keeps its sessions.
    pub fn is(&self, other: &Principal) -> bool {
        self.id == other.id
    }
}

/// What a principal may see of its tenant's catalog. Lists show only what it may call, and
/// calling anything else is answered as if it did not exist.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub enum Grants {
    /// Everything the tenant serves (the default).
    #[default]
    All,
    /// Only these.
    Only(Arc<Allow>),
}

impl Grants {
    /// Only what `allow` names.
    pub fn only(allow: Allow) -> Self {
        Grants::Only(Arc::new(allow))
    }
}

/// An allow-list: the tools and prompts by name, the resources by URI (a resource template
/// by its URI template, which then allows every URI it matches). Custom methods are not
/// restricted by it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Allow {
    /// Tool names.
    pub tools: BTreeSet<String>,
    /// Prompt names.
    pub prompts: BTreeSet<String>,
    /// Resource URIs and resource-template URI templates.
    pub resources: BTreeSet<String>,
}

impl Allow {
    /// Allows these tools (and nothing else that is not added).
    pub fn tools<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.tools.extend(names.into_iter().map(Into::into));
        self
    }

    /// Allows these prompts.
    pub fn prompts<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.prompts.extend(names.into_iter().map(Into::into));
        self
    }

    /// Allows these resources (URIs, or templates' URI templates).
    pub fn resources<I, S>(mut self, uris: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.resources.extend(uris.into_iter().map(Into::into));
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_principal_sees_everything_unless_limited() {
        assert_eq!(Principal::new("key:a").grants(), &Grants::All);
        let limited =
            Principal::with_grants("key:a", Grants::only(Allow::default().tools(["echo"])));
        assert!(matches!(limited.grants(), Grants::Only(a) if a.tools.contains("echo")));
    }

    #[test]
    fn the_same_caller_is_the_same_id_whatever_its_grants() {
        let all = Principal::new("key:a");
        let limited = Principal::with_grants("key:a", Grants::only(Allow::default()));
        assert!(all.is(&limited));
        assert!(!all.is(&Principal::new("key:b")));
    }

    #[test]
    fn anonymous_callers_on_one_thread_share_one_id() {
        let (a, b) = (Principal::anonymous(), Principal::anonymous());
        assert_eq!(a.id(), "anonymous");
        assert!(Arc::ptr_eq(&a.id_arc(), &b.id_arc()));
    }
}
