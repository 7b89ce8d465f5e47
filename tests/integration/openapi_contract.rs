//! Reading the OpenAPI document in tests: its schemas as validators
//! (JSON Schema draft 2020-12, formats checked), the responses it
//! documents, and [`Shapes`], which records the members and enum values
//! that real JSON holds so that they can be compared with what the
//! document declares.

use std::collections::{BTreeMap, BTreeSet};

use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// The document as a JSON value, with ways to look into it.
pub struct Contract {
    pub doc: Value,
}

impl Contract {
    pub fn parse(text: &str) -> Self {
        Self {
            doc: serde_json::from_str(text).expect("the document is JSON"),
        }
    }

    /// The value at a JSON pointer (`/components/schemas/Project`), or at a
    /// local reference (`#/components/schemas/Project`).
    pub fn at(&self, pointer: &str) -> &Value {
        let pointer = pointer.strip_prefix('#').unwrap_or(pointer);
        self.doc
            .pointer(pointer)
            .unwrap_or_else(|| panic!("nothing at {pointer} in the document"))
    }

    /// Where `value` points when it is a reference object, else `None`.
    pub fn reference(value: &Value) -> Option<&str> {
        value.get("$ref").and_then(Value::as_str)
    }

    /// Follows references from `pointer` to the object they end on; answers
    /// that object's pointer.
    pub fn resolve_pointer(&self, pointer: &str) -> String {
        let mut pointer = pointer.trim_start_matches('#').to_owned();
        while let Some(next) = Self::reference(self.at(&pointer)) {
            pointer = next.trim_start_matches('#').to_owned();
        }
        pointer
    }

    /// The `get` operation of a path, such as `/v1/projects`.
    pub fn operation(&self, path: &str) -> String {
        let pointer = format!("/paths/{}/get", escape(path));
        self.at(&pointer);
        pointer
    }

    /// The pointer of the response an operation documents for `status`,
    /// references followed; `None` when the status is not documented.
    pub fn response(&self, operation: &str, status: u16) -> Option<String> {
        let pointer = format!("{operation}/responses/{status}");
        self.doc
            .pointer(&pointer)
            .map(|_| self.resolve_pointer(&pointer))
    }

    /// The statuses an operation documents.
    pub fn statuses(&self, operation: &str) -> BTreeSet<u16> {
        self.at(&format!("{operation}/responses"))
            .as_object()
            .expect("responses is an object")
            .keys()
            .map(|status| status.parse().expect("statuses are numbers"))
            .collect()
    }

    /// The pointers of an operation's parameters, references followed.
    pub fn parameters(&self, operation: &str) -> Vec<String> {
        let count = self
            .at(&format!("{operation}/parameters"))
            .as_array()
            .map_or(0, Vec::len);
        (0..count)
            .map(|i| self.resolve_pointer(&format!("{operation}/parameters/{i}")))
            .collect()
    }

    /// The pointer of an operation's parameter called `name`.
    pub fn parameter(&self, operation: &str, name: &str) -> String {
        self.parameters(operation)
            .into_iter()
            .find(|pointer| self.at(pointer)["name"] == name)
            .unwrap_or_else(|| panic!("{operation} has no parameter {name}"))
    }

    /// The names of an operation's query parameters.
    pub fn query_parameters(&self, operation: &str) -> BTreeSet<String> {
        self.parameters(operation)
            .iter()
            .map(|pointer| self.at(pointer))
            .filter(|parameter| parameter["in"] == "query")
            .map(|parameter| parameter["name"].as_str().unwrap().to_owned())
            .collect()
    }

    /// The pointer of a response's `application/json` schema.
    pub fn json_schema_of(&self, response: &str) -> String {
        format!("{response}/content/application~1json/schema")
    }

    /// A validator for the schema at `pointer`, with the whole document as
    /// its root so that references resolve, and formats (`uuid`,
    /// `date-time`) checked.
    pub fn validator(&self, pointer: &str) -> jsonschema::Validator {
        let mut root = self.doc.clone();
        root["$ref"] = json!(fragment(pointer.trim_start_matches('#')));
        jsonschema::draft202012::options()
            .should_validate_formats(true)
            .build(&root)
            .unwrap_or_else(|e| panic!("the schema at {pointer} compiles: {e}"))
    }

    /// Panics with every reason `instance` does not match the schema at
    /// `pointer`.
    pub fn assert_valid(&self, pointer: &str, instance: &Value, what: &str) {
        let validator = self.validator(pointer);
        let errors: Vec<String> = validator
            .iter_errors(instance)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(
            errors.is_empty(),
            "{what} does not match {pointer}:\n  {}\n{instance:#}",
            errors.join("\n  ")
        );
    }

    /// Checks a response header's text against the documented header at
    /// `pointer` (integers are read as integers).
    pub fn assert_header_valid(&self, pointer: &str, text: &str, what: &str) {
        let schema = format!("{}/schema", self.resolve_pointer(pointer));
        let value = if self.at(&schema)["type"] == "integer" {
            json!(
                text.parse::<i64>()
                    .unwrap_or_else(|_| panic!("{what}: {text:?} is not an integer"))
            )
        } else {
            json!(text)
        };
        self.assert_valid(&schema, &value, what);
    }

    /// Every `$ref` in the document.
    pub fn references(&self) -> Vec<String> {
        fn walk(value: &Value, found: &mut Vec<String>) {
            match value {
                Value::Object(map) => {
                    if let Some(Value::String(target)) = map.get("$ref") {
                        found.push(target.clone());
                    }
                    map.values().for_each(|v| walk(v, found));
                }
                Value::Array(items) => items.iter().for_each(|v| walk(v, found)),
                _ => {}
            }
        }
        let mut found = Vec::new();
        walk(&self.doc, &mut found);
        found
    }

    /// The `enum` of the schema at `pointer` (references followed).
    pub fn enum_at(&self, pointer: &str) -> BTreeSet<String> {
        self.at(&self.resolve_pointer(pointer))["enum"]
            .as_array()
            .unwrap_or_else(|| panic!("no enum at {pointer}"))
            .iter()
            .map(|v| v.as_str().expect("enum values are strings").to_owned())
            .collect()
    }
}

/// A JSON pointer as a URI fragment (`#/paths/~1v1~1projects~1%7Bid%7D`):
/// characters a fragment cannot hold are percent-encoded (RFC 6901
/// section 6).
fn fragment(pointer: &str) -> String {
    let mut out = String::from("#");
    for byte in pointer.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~/!$&'()*+,;=:@".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// A path as one JSON pointer token.
pub fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// Every value a serde enum reads, taken from serde's own "unknown variant"
/// error, which lists them all: a variant added to the type shows up here
/// without this code changing.
pub fn variants_of<T: DeserializeOwned + std::fmt::Debug>() -> BTreeSet<String> {
    let error = serde_json::from_value::<T>(json!("\u{1}not a variant"))
        .expect_err("no variant has that name")
        .to_string();
    let (_, expected) = error
        .split_once("expected")
        .unwrap_or_else(|| panic!("serde names the variants: {error}"));
    expected
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// What real JSON showed of each object and enum schema it was checked
/// against: the members every instance had, the members any instance had,
/// and the enum values met. Comparing these with the document finds a
/// member the code writes and the document lacks, a documented member the
/// code never writes, a wrong `required` list, and an enum value the data
/// never showed (so the data did not cover it).
#[derive(Default)]
pub struct Shapes {
    /// Object schema pointer -> (members any instance had, members every
    /// instance had).
    objects: BTreeMap<String, (BTreeSet<String>, BTreeSet<String>)>,
    /// Enum schema pointer -> values met.
    enums: BTreeMap<String, BTreeSet<String>>,
}

impl Shapes {
    /// Records `value`, checked against the schema at `pointer`.
    pub fn record(&mut self, contract: &Contract, pointer: &str, value: &Value) {
        let pointer = contract.resolve_pointer(pointer);
        let schema = contract.at(&pointer);
        // One of several schemas: the one `value` is valid against.
        if let Some(choices) = schema.get("oneOf").and_then(Value::as_array) {
            let valid: Vec<String> = (0..choices.len())
                .map(|i| format!("{pointer}/oneOf/{i}"))
                .filter(|choice| contract.validator(choice).is_valid(value))
                .collect();
            assert_eq!(valid.len(), 1, "exactly one of {pointer} fits {value}");
            return self.record(contract, &valid[0], value);
        }
        if schema.get("enum").is_some()
            && let Some(text) = value.as_str()
        {
            self.enums
                .entry(pointer.clone())
                .or_default()
                .insert(text.to_owned());
        }
        match value {
            Value::Object(members) if schema.get("properties").is_some() => {
                let keys: BTreeSet<String> = members.keys().cloned().collect();
                let (any, every) = self
                    .objects
                    .entry(pointer.clone())
                    .or_insert_with(|| (BTreeSet::new(), keys.clone()));
                any.extend(keys.iter().cloned());
                every.retain(|key| keys.contains(key));
                for (key, member) in members {
                    let property = format!("{pointer}/properties/{}", escape(key));
                    if contract.doc.pointer(&property).is_some() {
                        self.record(contract, &property, member);
                    }
                }
            }
            Value::Array(items) if schema.get("items").is_some() => {
                for item in items {
                    self.record(contract, &format!("{pointer}/items"), item);
                }
            }
            _ => {}
        }
    }

    /// The object schemas recorded.
    pub fn objects(&self) -> BTreeSet<&str> {
        self.objects.keys().map(String::as_str).collect()
    }

    /// Every difference between what was recorded and what the document
    /// says, except the `allowed` ones (pointer of a property or enum
    /// value, such as `/components/schemas/X/properties/y` or
    /// `/components/schemas/X/properties/y = value`).
    pub fn differences(&self, contract: &Contract, allowed: &[&str]) -> Vec<String> {
        let mut found = Vec::new();
        for (pointer, (any, every)) in &self.objects {
            let schema = contract.at(pointer);
            let declared: BTreeSet<String> = schema["properties"]
                .as_object()
                .expect("properties is an object")
                .keys()
                .cloned()
                .collect();
            let required: BTreeSet<String> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().map(|v| v.as_str().unwrap().to_owned()).collect())
                .unwrap_or_default();
            for key in any.difference(&declared) {
                found.push(format!("{pointer}: `{key}` is written but not documented"));
            }
            for key in declared.difference(any) {
                found.push(format!(
                    "{pointer}/properties/{key}: documented, never written"
                ));
            }
            for key in every.difference(&required) {
                found.push(format!(
                    "{pointer}: `{key}` is always written, not required"
                ));
            }
            for key in required.difference(every) {
                found.push(format!(
                    "{pointer}: `{key}` is required, not always written"
                ));
            }
        }
        for (pointer, seen) in &self.enums {
            for value in contract.enum_at(pointer).difference(seen) {
                found.push(format!("{pointer} = {value}: documented, never seen"));
            }
        }
        found.retain(|difference| {
            !allowed
                .iter()
                .any(|allowed| difference.starts_with(&format!("{allowed}:")))
        });
        found
    }
}
