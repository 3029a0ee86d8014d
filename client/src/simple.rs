//! Requests that are answered in one round: the lists (page by page), `server/discover` and
//! `completion/complete`. Their results are complete or wrong: an input-required one, or a
//! `resultType` the client does not know, is an error.

use std::future::Future;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::error::Error;
use crate::handler::InputContext;
use crate::protocol::results::{Classified, Page};
use crate::protocol::tools::Tool;
use crate::protocol::Malformed;
use crate::session::Session;

/// Sends `method` and returns its complete result.
pub(crate) async fn call(
    session: &Session,
    method: &str,
    params: Map<String, Value>,
) -> Result<Map<String, Value>, Error> {
    let result = session
        .call(method, params, &InputContext::default())
        .await?;
    let classified = Classified::of(result).map_err(|source| malformed(method, source))?;
    match classified {
        Classified::Complete(result) => Ok(result),
        Classified::InputRequired(_) => Err(Error::UnexpectedInputRequired {
            method: method.to_owned(),
        }),
        Classified::Unknown(result_type) => Err(Error::UnknownResultType {
            method: method.to_owned(),
            result_type,
        }),
    }
}

pub(crate) fn malformed(method: &str, source: Malformed) -> Error {
    Error::Malformed {
        method: method.to_owned(),
        source,
    }
}

/// One page of a list method (`tools/list`, ...), whose items are under `key`.
pub(crate) async fn page<T: DeserializeOwned>(
    session: &Session,
    method: &'static str,
    key: &str,
    cursor: Option<&str>,
) -> Result<Page<T>, Error> {
    let mut params = Map::new();
    if let Some(cursor) = cursor {
        params.insert("cursor".into(), Value::String(cursor.to_owned()));
    }
    let result = call(session, method, params).await?;
    Page::parse(method, key, result).map_err(|source| malformed(method, source))
}

/// Every page of a list method, following `nextCursor` until there is none (or the server
/// hands back the cursor it was just given, which would loop forever).
pub(crate) async fn all<T: DeserializeOwned>(
    session: &Session,
    method: &'static str,
    key: &str,
) -> Result<Vec<T>, Error> {
    every_page(|cursor| async move { page(session, method, key, cursor.as_deref()).await }).await
}

async fn every_page<T, F, Fut>(mut next: F) -> Result<Vec<T>, Error>
where
    F: FnMut(Option<String>) -> Fut,
    Fut: Future<Output = Result<Page<T>, Error>>,
{
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let page = next(cursor.clone()).await?;
        items.extend(page.items);
        match page.next_cursor {
            Some(next) if Some(&next) != cursor.as_ref() => cursor = Some(next),
            _ => return Ok(items),
        }
    }
}

/// One page of `tools/list`, minus the tools with invalid `x-mcp-header` annotations; the
/// session learns every listed tool's headers.
pub(crate) async fn tools_page(
    session: &Session,
    cursor: Option<&str>,
) -> Result<Page<Tool>, Error> {
    let page = page::<Tool>(session, "tools/list", "tools", cursor).await?;
    Ok(Page {
        items: session.learn_tools(page.items),
        next_cursor: page.next_cursor,
    })
}

/// Every valid tool, over all pages.
pub(crate) async fn all_tools(session: &Session) -> Result<Vec<Tool>, Error> {
    every_page(|cursor| async move { tools_page(session, cursor.as_deref()).await }).await
}
