//! The terminal client's JSON: every field or some (`--json [FIELDS]`, as
//! `gh` has it), through a jq program (`--jq`, run by jaq);
//! pretty-printed and coloured on a terminal, compact when piped.

use std::io::{IsTerminal, Write};

use anyhow::{Context as _, anyhow, bail};
use jaq_core::load::{Arena, File, Loader};
use jaq_core::{Ctx, Vars, data, unwrap_valr};
use jaq_json::write::{Pp, Styles};
use jaq_json::{Map, Val};
use serde_json::value::RawValue;

use super::escapes::{printable, printable_json};
use crate::telemetry;

/// Writes one JSON text (a document, or an object of NDJSON) and a
/// newline: as it is, unless it goes to a terminal.
pub fn write_json_line(text: &str, style: Style, out: &mut impl Write) -> anyhow::Result<()> {
    if style.pretty {
        writeln!(out, "{}", printable_json(text))?;
    } else {
        writeln!(out, "{text}")?;
    }
    Ok(())
}

/// How JSON is laid out: indented on a terminal, coloured there unless
/// `NO_COLOR` says otherwise.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Style {
    pub pretty: bool,
    pub colour: bool,
}

impl Style {
    /// The style for stdout as it is now.
    pub fn stdout() -> Self {
        let terminal = std::io::stdout().is_terminal();
        Self {
            pretty: terminal,
            colour: telemetry::colour(terminal),
        }
    }
}

/// A compiled jq program.
pub struct Jq(jaq_core::Filter<data::JustLut<Val>>);

impl Jq {
    /// Compiles `code` with jq's standard library, `env` aside: the
    /// client's environment may hold its token. The error is one line.
    pub fn compile(code: &str) -> anyhow::Result<Self> {
        let defs = jaq_core::defs()
            .chain(jaq_std::defs())
            .chain(jaq_json::defs());
        let funs = jaq_core::funs()
            .chain(jaq_std::funs())
            .chain(jaq_json::funs())
            .filter(|(name, _, _)| *name != "env");
        let arena = Arena::default();
        let modules = Loader::new(defs)
            .load(&arena, File { code, path: () })
            .map_err(|errors| {
                let said: Vec<String> = errors
                    .into_iter()
                    .flat_map(|(_, error)| load_error(error))
                    .collect();
                anyhow!("--jq: {}", said.join("; "))
            })?;
        let filter = jaq_core::Compiler::default()
            .with_funs(funs)
            .compile(modules)
            .map_err(|errors| {
                let said: Vec<String> = errors
                    .into_iter()
                    .flat_map(|(_, undefined)| undefined)
                    .map(|(name, what)| format!("undefined {} {name}", what.as_str()))
                    .collect();
                anyhow!("--jq: {}", said.join("; "))
            })?;
        Ok(Self(filter))
    }

    /// The program's outputs for `input`; an error is one line.
    pub fn run(&self, input: Val) -> anyhow::Result<Vec<Val>> {
        let ctx = Ctx::<data::JustLut<Val>>::new(&self.0.lut, Vars::new([]));
        self.0
            .id
            .run((ctx, input))
            .map(unwrap_valr)
            .map(|result| result.map_err(|error| anyhow!("--jq: {error}")))
            .collect()
    }
}

/// What jaq's loader refused, one phrase each, naming where.
fn load_error(error: jaq_core::load::Error<&str>) -> Vec<String> {
    let at = |rest: &str| {
        let shown: String = rest.chars().take(20).collect();
        if shown.is_empty() {
            "at the end".to_owned()
        } else {
            format!("at {shown:?}")
        }
    };
    match error {
        jaq_core::load::Error::Io(errors) => errors
            .into_iter()
            .map(|(path, why)| format!("{path}: {why}"))
            .collect(),
        jaq_core::load::Error::Lex(errors) => errors
            .into_iter()
            .map(|(expected, rest)| format!("expected {} {}", expected.as_str(), at(rest)))
            .collect(),
        jaq_core::load::Error::Parse(errors) => errors
            .into_iter()
            .map(|(expected, rest)| format!("expected {} {}", expected.as_str(), at(rest)))
            .collect(),
    }
}

/// What the client prints as JSON.
pub struct Json {
    /// Only these members, in this order (`--json FIELDS`).
    pub fields: Option<Vec<String>>,
    pub jq: Option<Jq>,
    pub style: Style,
}

impl Json {
    /// The fields of `--json FIELDS`, each one of `known`; `""` (a bare
    /// `--json`) is every field. `what` names the objects in errors.
    pub fn fields(
        given: &str,
        known: &[String],
        what: &str,
    ) -> anyhow::Result<Option<Vec<String>>> {
        if given.is_empty() {
            return Ok(None);
        }
        let mut fields: Vec<String> = Vec::new();
        for field in given.split(',').map(str::trim) {
            if field.is_empty() {
                bail!(
                    "--json {given:?}: an empty field name; write names apart by commas, such as --json id,slug"
                );
            }
            if !known.iter().any(|name| name == field) {
                bail!(
                    "--json: {what} have no field {field:?}; their fields are {}",
                    known.join(", ")
                );
            }
            if !fields.iter().any(|name| name == field) {
                fields.push(field.to_owned());
            }
        }
        Ok(Some(fields))
    }

    /// Writes `items` (the objects as the server sent them) as the one
    /// JSON array, or the outputs of the jq program, each on its own.
    pub fn write(&self, items: &[Box<RawValue>], out: &mut impl Write) -> anyhow::Result<()> {
        if self.fields.is_none() && self.jq.is_none() && !self.style.pretty {
            // Exactly as sent, one object a line.
            let lines: Vec<&str> = items.iter().map(|item| item.get()).collect();
            return one_a_line(&lines, out);
        }
        let mut values = Vec::with_capacity(items.len());
        for item in items {
            let value = jaq_json::read::parse_single(item.get().as_bytes())
                .map_err(|error| anyhow!("the server's answer is not JSON: {error}"))?;
            values.push(match &self.fields {
                Some(fields) => select(&value, fields),
                None => value,
            });
        }
        let document = Val::Arr(values.into());
        match &self.jq {
            None if !self.style.pretty => {
                // Compact, one object a line, as the whole objects are.
                let Val::Arr(values) = &document else {
                    unreachable!("an array")
                };
                let lines: Vec<String> = values
                    .iter()
                    .map(|value| render(value, Style::PLAIN))
                    .collect();
                one_a_line(&lines, out)?;
            }
            None => writeln!(out, "{}", render(&document, self.style))?,
            Some(jq) => write_outputs(jq, document, self.style, out)?,
        }
        Ok(())
    }
}

impl Json {
    /// Writes one object (`text`, as the server sent it): whole, or only
    /// the fields, or through the jq program; as sent when piped.
    pub fn write_one(&self, text: &str, out: &mut impl Write) -> anyhow::Result<()> {
        match &self.fields {
            None => print_document(text, self.jq.as_ref(), self.style, out),
            Some(fields) => {
                let value = jaq_json::read::parse_single(text.as_bytes())
                    .map_err(|error| anyhow!("the server's answer is not JSON: {error}"))?;
                let chosen = select(&value, fields);
                match &self.jq {
                    Some(jq) => write_outputs(jq, chosen, self.style, out),
                    None => Ok(writeln!(out, "{}", render(&chosen, self.style))?),
                }
            }
        }
    }
}

/// One JSON document (`text`): as it is when piped, indented and coloured
/// on a terminal, or the outputs of the jq program.
pub fn print_document(
    text: &str,
    jq: Option<&Jq>,
    style: Style,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    if jq.is_none() && !style.pretty {
        writeln!(out, "{text}")?;
        return Ok(());
    }
    let document = jaq_json::read::parse_single(text.as_bytes())
        .map_err(|error| anyhow!("the server's answer is not JSON: {error}"))?;
    match jq {
        None => writeln!(out, "{}", render(&document, style))?,
        Some(jq) => write_outputs(jq, document, style, out)?,
    }
    Ok(())
}

/// The outputs of `jq` run over `document`, each on its own.
fn write_outputs(jq: &Jq, document: Val, style: Style, out: &mut impl Write) -> anyhow::Result<()> {
    for output in jq.run(document)? {
        match &output {
            // As `gh --jq` and `jq -r` print them; a person reads them
            // on a terminal, so there they are made printable.
            Val::TStr(text) if style.pretty => {
                writeln!(out, "{}", printable(&String::from_utf8_lossy(text)))?;
            }
            Val::TStr(text) => {
                out.write_all(text)?;
                writeln!(out)?;
            }
            other => writeln!(out, "{}", render(other, style))?,
        }
    }
    Ok(())
}

/// A JSON array of `lines` (each an element's JSON text), one a line.
fn one_a_line(lines: &[impl AsRef<str>], out: &mut impl Write) -> anyhow::Result<()> {
    if lines.is_empty() {
        writeln!(out, "[]")?;
    } else {
        let lines: Vec<&str> = lines.iter().map(AsRef::as_ref).collect();
        writeln!(out, "[\n{}\n]", lines.join(",\n"))?;
    }
    Ok(())
}

impl Style {
    const PLAIN: Self = Self {
        pretty: false,
        colour: false,
    };
}

/// `value` (an object) with only `fields`, in that order; a field the
/// object lacks is null.
fn select(value: &Val, fields: &[String]) -> Val {
    let Val::Obj(object) = value else {
        return value.clone();
    };
    let mut chosen = Map::default();
    for field in fields {
        let key = Val::utf8_str(field.clone().into_bytes());
        let member = object.get(&key).cloned().unwrap_or(Val::Null);
        chosen.insert(key, member);
    }
    Val::obj(chosen)
}

/// `value` as JSON text in `style`: two-space indents and jq's colours,
/// and on a terminal [`printable_json`].
pub fn render(value: &Val, style: Style) -> String {
    let printer = Pp {
        indent: style.pretty.then(|| "  ".to_owned()),
        styles: if style.colour {
            Styles::ansi()
        } else {
            Styles::default()
        },
        sort_keys: false,
        sep_space: style.pretty,
    };
    let mut text = Vec::new();
    jaq_json::write::write(&mut text, &printer, 0, value).expect("writing to memory succeeds");
    let text = String::from_utf8_lossy(&text);
    if style.pretty {
        printable_json(&text).into_owned()
    } else {
        text.into_owned()
    }
}

/// The members of `schema` in the OpenAPI document: the fields `--json`
/// may name.
pub fn schema_fields(schema: &str) -> anyhow::Result<Vec<String>> {
    let document: serde_json::Value = serde_json::from_str(crate::http::openapi::DOCUMENT)
        .context("the OpenAPI document is JSON")?;
    let properties = document["components"]["schemas"][schema]["properties"]
        .as_object()
        .ok_or_else(|| anyhow!("the OpenAPI document has no schema {schema}"))?;
    Ok(properties.keys().cloned().collect())
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;

    fn items(text: &[&str]) -> Vec<Box<RawValue>> {
        text.iter()
            .map(|item| RawValue::from_string((*item).to_owned()).unwrap())
            .collect()
    }

    fn written(json: &Json, text: &[&str]) -> String {
        let mut out = Vec::new();
        json.write(&items(text), &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    const ITEMS: [&str; 2] = [
        r#"{"id":"b","slug":"zeta","n":1.50,"ok":true,"none":null}"#,
        r#"{"id":"a","slug":"alpha","n":2,"ok":false,"none":null}"#,
    ];

    #[test]
    fn piped_json_is_the_objects_as_sent() {
        let json = Json {
            fields: None,
            jq: None,
            style: Style::PLAIN,
        };
        assert_eq!(
            written(&json, &ITEMS),
            format!("[\n{},\n{}\n]\n", ITEMS[0], ITEMS[1])
        );
        assert_eq!(written(&json, &[]), "[]\n");
    }

    #[test]
    fn fields_are_chosen_in_the_order_given() {
        let known: Vec<String> = ["id", "slug", "n", "ok", "none"]
            .map(str::to_owned)
            .to_vec();
        let fields = Json::fields("slug, id,slug", &known, "projects").unwrap();
        assert_eq!(fields, Some(vec!["slug".to_owned(), "id".to_owned()]));
        assert_eq!(Json::fields("", &known, "projects").unwrap(), None);
        let error = Json::fields("id,sulg", &known, "projects")
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            "--json: projects have no field \"sulg\"; their fields are id, slug, n, ok, none"
        );
        assert!(Json::fields("id,,slug", &known, "projects").is_err());

        let json = Json {
            fields,
            jq: None,
            style: Style::PLAIN,
        };
        assert_eq!(
            written(&json, &ITEMS),
            "[\n{\"slug\":\"zeta\",\"id\":\"b\"},\n{\"slug\":\"alpha\",\"id\":\"a\"}\n]\n"
        );
    }

    #[test]
    fn a_terminal_gets_indents_and_colours() {
        let pretty = Json {
            fields: Some(vec!["id".into(), "ok".into(), "none".into()]),
            jq: None,
            style: Style {
                pretty: true,
                colour: false,
            },
        };
        assert_eq!(
            written(&pretty, &ITEMS[..1]),
            "[\n  {\n    \"id\": \"b\",\n    \"ok\": true,\n    \"none\": null\n  }\n]\n"
        );
        let coloured = Json {
            style: Style {
                pretty: true,
                colour: true,
            },
            ..pretty
        };
        let text = written(&coloured, &ITEMS[..1]);
        // jq's colours: keys blue, strings green, null grey.
        assert!(text.contains("\x1b[1;34m\"id\"\x1b[0m"), "{text:?}");
        assert!(text.contains("\x1b[32m\"b\"\x1b[0m"), "{text:?}");
        assert!(text.contains("\x1b[90mnull\x1b[0m"), "{text:?}");
        assert!(
            text.starts_with("\x1b[1;39m[\x1b[0m\n  \x1b[1;39m{"),
            "{text:?}"
        );
    }

    #[test]
    fn jq_filters_and_prints_strings_raw() {
        let run = |code: &str| {
            let json = Json {
                fields: None,
                jq: Some(Jq::compile(code).unwrap()),
                style: Style::PLAIN,
            };
            written(&json, &ITEMS)
        };
        assert_eq!(run(".[].slug"), "zeta\nalpha\n");
        assert_eq!(run("map(.n)"), "[1.50,2]\n");
        assert_eq!(run("[.[] | select(.ok)] | length"), "1\n");
        assert_eq!(run("sort_by(.id) | map(.id) | join(\",\")"), "a,b\n");
        assert_eq!(
            run(".[0] | {slug, id}"),
            "{\"slug\":\"zeta\",\"id\":\"b\"}\n"
        );
        assert_eq!(run("empty"), "");

        for (code, said) in [
            (".[", "--jq: expected"),
            ("nosuchfunction", "--jq: undefined filter nosuchfunction"),
            ("env", "--jq: undefined filter env"),
        ] {
            let error = Jq::compile(code).err().expect(code).to_string();
            assert!(error.starts_with(said), "{code}: {error}");
            assert!(!error.contains('\n'), "{error}");
        }
        let failing = Json {
            fields: None,
            jq: Some(Jq::compile(".[0].slug + 1").unwrap()),
            style: Style::PLAIN,
        };
        let mut out = Vec::new();
        let error = failing.write(&items(&ITEMS), &mut out).unwrap_err();
        assert!(error.to_string().starts_with("--jq: "), "{error}");
    }

    #[test]
    fn text_from_the_server_is_made_printable() {
        let hostile = "a\u{1b}[2J\u{1b}]52;c;aGk=\u{7}\u{9b}1m\u{202e}z\té\n日\u{2066}\u{7f}";
        assert_eq!(
            printable(hostile),
            r"a\u{1b}[2J\u{1b}]52;c;aGk=\u{7}\u{9b}1m\u{202e}z\té\n日\u{2066}\u{7f}"
        );
        // What does not act is left as it is, backslashes, quotes and
        // combining marks too.
        let plain = "plain é 日本 \\ \" e\u{301}";
        assert!(matches!(printable(plain), Cow::Borrowed(text) if text == plain));

        // JSON on a terminal: the same value, written with JSON escapes.
        let text = serde_json::to_string(hostile).unwrap();
        let value = jaq_json::read::parse_single(text.as_bytes()).unwrap();
        let terminal = Style {
            pretty: true,
            colour: false,
        };
        let shown = render(&value, terminal);
        assert_eq!(
            shown,
            r#""a\u001b[2J\u001b]52;c;aGk=\u0007\u009b1m\u202ez\té\n日\u2066\u007f""#
        );
        assert_eq!(serde_json::from_str::<String>(&shown).unwrap(), hostile);
        // Piped, it is left as the JSON writer wrote it.
        assert!(render(&value, Style::PLAIN).contains('\u{202e}'));
    }

    #[test]
    fn the_listings_fields_come_from_the_openapi_document() {
        let fields = schema_fields("Project").unwrap();
        assert!(
            fields.contains(&"slug".to_owned()) && fields.contains(&"organization_id".to_owned())
        );
        assert!(
            schema_fields("ApiToken")
                .unwrap()
                .contains(&"last_used_at".to_owned())
        );
        assert!(
            schema_fields("ProxySettings")
                .unwrap()
                .contains(&"is_active".to_owned())
        );
        assert!(schema_fields("Nothing").is_err());
    }
}
