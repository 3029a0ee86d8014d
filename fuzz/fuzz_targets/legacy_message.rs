//! The legacy (2025-11-25) message path on any bytes: classification, then what a legacy
//! session reads from a message: `initialize` params, the progress token, the request a
//! cancellation names, and answers to the shim's input requests.
#![no_main]

use libfuzzer_sys::fuzz_target;
use roundtrip_runtime::legacy::handshake;
use roundtrip_runtime::protocol::input::parse_input_responses;
use roundtrip_runtime::protocol::meta::legacy_progress_token;
use roundtrip_runtime::protocol::Incoming;

fuzz_target!(|data: &[u8]| {
    match Incoming::parse(data) {
        Ok(Incoming::Request(mut request)) => {
            let _ = request.is_modern();
            let _ = legacy_progress_token(request.params.as_ref());
            let _ = handshake::parse(&request);
            let answers = request
                .params
                .as_mut()
                .and_then(|p| p.remove("inputResponses"));
            let _ = parse_input_responses(answers);
        }
        Ok(Incoming::Notification(notification)) => {
            let _ = notification.cancelled_request();
        }
        Ok(Incoming::Response(response)) => {
            // What the shim hands a handler: an answer object, read as an input response.
            if let Ok(result) = response.outcome {
                let _ = parse_input_responses(Some(serde_json::json!({ "k": result })));
            }
        }
        Err(_) => {}
    }
});
