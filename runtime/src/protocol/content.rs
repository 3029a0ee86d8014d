//! Content blocks shared by tool results and prompt messages.

use serde::Serialize;
use serde_json::Value;

/// One content block, written with its `type` (`text`, `image`, `audio`, `resource`,
/// `resource_link`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Content {
    /// Plain text.
    Text {
        /// Shown to the user or the model as it is.
        text: String,
    },
    /// An image, inline.
    Image {
        /// The image bytes, base64-encoded.
        data: String,
        /// The image's MIME type, e.g. `image/png`.
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// Audio, inline.
    Audio {
        /// The audio bytes, base64-encoded.
        data: String,
        /// The audio's MIME type, e.g. `audio/wav`.
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// A resource's contents, embedded.
    Resource {
        /// The embedded contents, text or blob.
        resource: ResourceContents,
    },
    /// A reference to a resource the client may read (`resources/read`), not its contents.
    ResourceLink {
        /// What the client passes to `resources/read` to fetch it.
        uri: String,
        /// A short name for the resource.
        name: String,
        /// The MIME type of its contents, if known.
        #[serde(rename = "mimeType", skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
    },
}

impl Content {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }

    /// An image block from base64 data.
    pub fn image(base64: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Self::Image {
            data: base64.into(),
            mime_type: mime_type.into(),
        }
    }

    /// An audio block from base64 data.
    pub fn audio(base64: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Self::Audio {
            data: base64.into(),
            mime_type: mime_type.into(),
        }
    }

    /// An embedded resource block.
    pub fn resource(resource: ResourceContents) -> Self {
        Self::Resource { resource }
    }

    /// Structured JSON rendered as text, for tools that return data.
    pub fn json(value: &Value) -> Self {
        Self::text(value.to_string())
    }
}

/// One item of `resources/read` contents: text or base64 blob.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceContents {
    /// The URI these contents are of.
    pub uri: String,
    /// The MIME type of `text` or `blob`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Text contents; set instead of `blob`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Binary contents, base64-encoded; set instead of `text`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
}

impl ResourceContents {
    /// Text contents.
    pub fn text(
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        Self {
            uri: uri.into(),
            mime_type: Some(mime_type.into()),
            text: Some(text.into()),
            blob: None,
        }
    }

    /// Binary contents from base64 data.
    pub fn blob(
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        base64: impl Into<String>,
    ) -> Self {
        Self {
            uri: uri.into(),
            mime_type: Some(mime_type.into()),
            text: None,
            blob: Some(base64.into()),
        }
    }
}
