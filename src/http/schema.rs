//! Request bodies checked against their schema in the served OpenAPI
//! document (`openapi.json`), so that the document a client reads is the
//! rule the service applies. Every problem is collected, each named by
//! its path (`override_cache[2].ttl`), for one 400 that names them all.
//!
//! The part of JSON Schema the request schemas use: `$ref`, `type` (a
//! name, or a list with `"null"` for members that `null` resets),
//! `enum`, `minimum`, `maximum`, `minLength`, `maxLength`, `minItems`,
//! `maxItems`, `items`, `properties`, `required`, `additionalProperties`
//! (`false`: other members are refused; a schema: each value checked),
//! and `readOnly` on a property (ignored when sent: it is removed). On the
//! way, an integral number (`60.0`) where an integer is wanted becomes
//! that integer. Rules past the document's (addresses, URLs, country
//! codes) are the domain's, checked after this.

use std::sync::LazyLock;

use serde_json::{Map, Number, Value};

use crate::domain::FieldError;
use crate::http::openapi::DOCUMENT;

static DOC: LazyLock<Value> =
    LazyLock::new(|| serde_json::from_str(DOCUMENT).expect("the served document is JSON"));

/// Checks `value` against `#/components/schemas/{name}`; answers every
/// problem found (none: the body fits, normalised).
pub fn check(name: &str, value: &mut Value) -> Vec<FieldError> {
    let schema = DOC
        .pointer(&format!("/components/schemas/{name}"))
        .unwrap_or_else(|| panic!("no schema {name} in the served document"));
    let mut problems = Vec::new();
    walk(schema, value, "", &mut problems);
    problems
}

fn resolve(mut schema: &Value) -> &Value {
    while let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
        let pointer = reference.trim_start_matches('#');
        schema = DOC
            .pointer(pointer)
            .unwrap_or_else(|| panic!("dangling reference {reference} in the served document"));
    }
    schema
}

fn types(schema: &Value) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(one)) => vec![one.as_str()],
        Some(Value::Array(many)) => many.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

fn member(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_owned()
    } else {
        format!("{parent}.{name}")
    }
}

fn walk(schema: &Value, value: &mut Value, path: &str, problems: &mut Vec<FieldError>) {
    let schema = resolve(schema);
    let types = types(schema);
    let mut problem = |message: String| problems.push(FieldError::new(path, message));
    if value.is_null() {
        if !types.contains(&"null") {
            problem("must not be null".into());
        }
        return;
    }
    let Some(kind) = types.iter().find(|kind| fits(kind, value)) else {
        let wanted: Vec<&str> = types.iter().copied().filter(|t| *t != "null").collect();
        problem(format!("must be {}", a_type(&wanted)));
        return;
    };
    if *kind == "integer"
        && let Some(whole) = value
            .as_f64()
            .filter(|_| !value.is_i64() && !value.is_u64())
    {
        // In range and integral: `fits` said so.
        *value = Value::Number(Number::from(whole as i64));
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.contains(value)
    {
        let names: Vec<String> = allowed.iter().map(|v| v.to_string()).collect();
        problem(format!("must be one of {}", names.join(", ")));
        return;
    }
    match value {
        Value::Number(number) => {
            let number = number.as_f64().unwrap_or(f64::NAN);
            let minimum = schema.get("minimum").and_then(Value::as_f64);
            let maximum = schema.get("maximum").and_then(Value::as_f64);
            if minimum.is_some_and(|min| number < min) || maximum.is_some_and(|max| number > max) {
                problem(match (minimum, maximum) {
                    (Some(min), Some(max)) => format!("must be between {min} and {max}"),
                    (Some(min), None) => format!("must be at least {min}"),
                    (None, max) => format!("must be at most {}", max.unwrap_or_default()),
                });
            }
        }
        Value::String(text) => {
            let length = text.chars().count() as u64;
            let min = schema.get("minLength").and_then(Value::as_u64);
            let max = schema.get("maxLength").and_then(Value::as_u64);
            if min.is_some_and(|min| length < min) || max.is_some_and(|max| length > max) {
                problem(format!(
                    "must be {} to {} characters long",
                    min.unwrap_or(0),
                    max.map_or("any number of".to_owned(), |m| m.to_string())
                ));
            }
        }
        Value::Array(items) => {
            let count = items.len() as u64;
            if let Some(max) = schema
                .get("maxItems")
                .and_then(Value::as_u64)
                .filter(|max| count > *max)
            {
                problem(format!("must hold at most {max} items"));
                return;
            }
            if let Some(min) = schema
                .get("minItems")
                .and_then(Value::as_u64)
                .filter(|min| count < *min)
            {
                problem(format!("must hold at least {min} items"));
            }
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter_mut().enumerate() {
                    walk(item_schema, item, &format!("{path}[{i}]"), problems);
                }
            }
        }
        Value::Object(members) => object(schema, members, path, problems),
        Value::Bool(_) | Value::Null => {}
    }
}

fn object(
    schema: &Value,
    members: &mut Map<String, Value>,
    path: &str,
    problems: &mut Vec<FieldError>,
) {
    let properties = schema.get("properties").and_then(Value::as_object);
    let property = |name: &str| properties.and_then(|p| p.get(name)).map(resolve);
    members.retain(|name, _| {
        !property(name).is_some_and(|p| p.get("readOnly") == Some(&Value::Bool(true)))
    });
    for (name, value) in members.iter_mut() {
        let path = member(path, name);
        match (property(name), schema.get("additionalProperties")) {
            (Some(property), _) => walk(property, value, &path, problems),
            (None, Some(Value::Bool(false))) => problems.push(FieldError::new(
                path,
                "is not a member this operation accepts",
            )),
            (None, Some(other @ Value::Object(_))) => walk(other, value, &path, problems),
            (None, _) => {}
        }
    }
    for required in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if !members.contains_key(required) {
            problems.push(FieldError::new(member(path, required), "is required"));
        }
    }
}

/// Whether `value` is of the JSON Schema type `kind`; an integer may be
/// written as a float with no fraction (`60.0`).
fn fits(kind: &str, value: &Value) -> bool {
    match (kind, value) {
        ("string", Value::String(_))
        | ("boolean", Value::Bool(_))
        | ("array", Value::Array(_))
        | ("object", Value::Object(_))
        | ("number", Value::Number(_)) => true,
        ("integer", Value::Number(number)) => {
            number.is_i64()
                || number.is_u64()
                || number
                    .as_f64()
                    .is_some_and(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
        }
        _ => false,
    }
}

fn a_type(types: &[&str]) -> String {
    let named: Vec<&str> = types
        .iter()
        .map(|kind| match *kind {
            "string" => "a string",
            "boolean" => "a boolean",
            "array" => "an array",
            "object" => "an object",
            "integer" => "an integer",
            "number" => "a number",
            _ => "a value of another type",
        })
        .collect();
    named.join(" or ")
}
