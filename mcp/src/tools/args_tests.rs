//! Tests of the shared argument parts of `args.rs` (kept apart so that the tool structs
//! stay the last items of that file).

use super::args::{Concise, DefaultFormat, Output, QueryArgs, ResponseFormat, Summary};
use rmcp::handler::server::common::schema_for_type;
use serde_json::json;

fn output<D: DefaultFormat>(arguments: serde_json::Value) -> Output<D> {
    serde_json::from_value(arguments).expect("arguments decode")
}

#[test]
fn response_format_defaults_per_tool_and_refuses_unknown_words_when_checked() {
    let absent = output::<Summary>(json!({}));
    assert_eq!(absent.format(), Ok(ResponseFormat::Summary));
    assert_eq!(absent.max_tokens(), 25000);
    let empty = output::<Concise>(json!({"response_format": ""}));
    assert_eq!(empty.format(), Ok(ResponseFormat::Concise));
    let upper = output::<Concise>(json!({"response_format": "DETAILED"}));
    assert_eq!(upper.format(), Ok(ResponseFormat::Detailed));
    // Decoding accepts any word; the tool's check refuses it with the message tools
    // have always given.
    let unknown = output::<Concise>(json!({"response_format": "Verbose"}));
    let error = unknown.format().expect_err("an unknown word");
    assert_eq!(
        error.message,
        "Invalid response_format 'verbose'. Valid: summary, concise, detailed"
    );
    assert_eq!(error.hint, None);
}

#[test]
fn flattened_parts_list_their_properties_with_the_tools_defaults() {
    let schema = schema_for_type::<QueryArgs>();
    let properties = schema["properties"].as_object().expect("properties");
    assert_eq!(properties["limit"]["default"], 50);
    assert_eq!(properties["offset"]["default"], 0);
    assert_eq!(properties["response_format"]["default"], "concise");
    assert_eq!(properties["response_format"]["type"], "string");
    assert_eq!(properties["max_tokens"]["default"], 25000);
    assert_eq!(properties["repo"]["default"], json!(null));
    assert!(schema.get("required").is_none());
}
