//! The JSON-RPC classifier and the modern envelope checks, on any bytes: the path every
//! HTTP and stdio message takes before dispatch. Neither may panic, whatever the body.
#![no_main]

use libfuzzer_sys::fuzz_target;
use roundtrip_runtime::dispatch::envelope::{
    check_modern, decode_header_value, HeaderText, HttpCheck, HttpHeaders,
};
use roundtrip_runtime::handler::Catalog;
use roundtrip_runtime::protocol::{Incoming, RequestMeta};

fuzz_target!(|data: &[u8]| {
    let Ok(Incoming::Request(request)) = Incoming::parse(data) else {
        return;
    };
    // Each check on its own copy: reading the envelope moves the capabilities out of it.
    let mut copy = request.clone();
    let _ = RequestMeta::from_params(
        copy.params.as_mut(),
        copy.meta_capabilities,
        copy.meta_version,
    );
    let _ = check_modern(&mut request.clone(), None);
    // The headers a correct client would send, and the body's own text as a header value.
    let text = String::from_utf8_lossy(data);
    let _ = decode_header_value(&text);
    let params = vec![("region", HeaderText::Text(&text))];
    let headers = HttpHeaders {
        protocol_version: Some(HeaderText::Text("2026-07-28")),
        method: Some(HeaderText::Text(request.method.as_str())),
        name: Some(HeaderText::Text(&text)),
        params: &params,
    };
    let catalog = Catalog::builder().build();
    let _ = check_modern(
        &mut request.clone(),
        Some(HttpCheck {
            headers: &headers,
            catalog: &catalog,
        }),
    );
});
