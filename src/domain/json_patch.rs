//! The change from one JSON value to another as an RFC 6902 JSON Patch:
//! what a dry run of a proxy-settings write answers as its `diff`
//! (`docs/management.md`, "Dry runs").
//!
//! Applied in order to the first value, the operations give the second.
//! Only `add`, `remove` and `replace` are used. Objects are compared
//! member by member, in name order (a member removed, added, or changed:
//! the change within it; removals first). Arrays are compared as diff(1) compares lines: the longest
//! common subsequence of equal elements stays; in each run between two
//! elements that stay, elements taken out and put in are paired in order
//! as changed (the change within each), and what is left is removed or
//! added. So a route put at the top of a list is one `add` at `/routes/0`,
//! not a change of every route below it. Any other difference (a value of
//! another type, two scalars) is a `replace` of the whole value.

use serde::Serialize;
use serde_json::Value;

/// One operation of a JSON Patch (RFC 6902 section 4).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Operation {
    pub op: Op,
    /// A JSON Pointer (RFC 6901) into the value the patch applies to.
    pub path: String,
    /// The new value (`add`, `replace`); absent for `remove`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    Add,
    Remove,
    Replace,
}

/// Arrays whose middle parts (common ends aside) hold more than this many
/// pairs of elements are compared position by position instead of by
/// their longest common subsequence: a bound on the work (a revision's
/// 1,000 routes against 1,000 others are 1,000,000 pairs, within it).
const MOST_COMPARED_PAIRS: usize = 4_000_000;

/// The operations that turn `from` into `to` (none when they are equal).
pub fn diff(from: &Value, to: &Value) -> Vec<Operation> {
    let mut operations = Vec::new();
    diff_at(from, to, &mut String::new(), &mut operations);
    operations
}

fn diff_at(from: &Value, to: &Value, path: &mut String, out: &mut Vec<Operation>) {
    if from == to {
        return;
    }
    match (from, to) {
        (Value::Object(before), Value::Object(after)) => {
            for name in before.keys().filter(|name| !after.contains_key(*name)) {
                at(path, name, |path| out.push(remove(path)));
            }
            for (name, value) in after {
                at(path, name, |path| match before.get(name) {
                    Some(old) => diff_at(old, value, path, out),
                    None => out.push(add(path, value)),
                });
            }
        }
        (Value::Array(before), Value::Array(after)) => diff_arrays(before, after, path, out),
        _ => out.push(Operation {
            op: Op::Replace,
            path: path.clone(),
            value: Some(to.clone()),
        }),
    }
}

fn diff_arrays(before: &[Value], after: &[Value], path: &mut String, out: &mut Vec<Operation>) {
    // Where the patched array stands: the elements before `position` are
    // `after`'s already, those from it on `before`'s still to go through.
    let mut position = 0;
    let (mut i, mut j) = (0, 0);
    let kept = common_subsequence(before, after);
    let ends = kept.iter().copied().map(Some).chain(std::iter::once(None));
    for next in ends {
        let (until_i, until_j) = next.unwrap_or((before.len(), after.len()));
        let (taken, put) = (until_i - i, until_j - j);
        let paired = taken.min(put);
        for k in 0..paired {
            at(path, &position.to_string(), |path| {
                diff_at(&before[i + k], &after[j + k], path, out);
            });
            position += 1;
        }
        for _ in paired..taken {
            at(path, &position.to_string(), |path| out.push(remove(path)));
        }
        for value in &after[j + paired..until_j] {
            at(path, &position.to_string(), |path| {
                out.push(add(path, value))
            });
            position += 1;
        }
        if next.is_some() {
            // The element both keep.
            position += 1;
        }
        (i, j) = (until_i + 1, until_j + 1);
    }
}

/// The index pairs of a longest common subsequence of equal elements, in
/// order: common ends first, then the classic table over the middle (or
/// nothing more when the middle is past [`MOST_COMPARED_PAIRS`]).
fn common_subsequence(before: &[Value], after: &[Value]) -> Vec<(usize, usize)> {
    let prefix = before.iter().zip(after).take_while(|(a, b)| a == b).count();
    let suffix = before[prefix..]
        .iter()
        .rev()
        .zip(after[prefix..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let middle_before = &before[prefix..before.len() - suffix];
    let middle_after = &after[prefix..after.len() - suffix];
    let mut pairs: Vec<(usize, usize)> = (0..prefix).map(|k| (k, k)).collect();
    let (n, m) = (middle_before.len(), middle_after.len());
    if n > 0 && m > 0 && n.saturating_mul(m) <= MOST_COMPARED_PAIRS {
        // lengths[a][b]: the longest common subsequence of the middles'
        // tails from a and from b.
        let width = m + 1;
        let mut lengths = vec![0u32; (n + 1) * width];
        for a in (0..n).rev() {
            for b in (0..m).rev() {
                lengths[a * width + b] = if middle_before[a] == middle_after[b] {
                    lengths[(a + 1) * width + b + 1] + 1
                } else {
                    lengths[(a + 1) * width + b].max(lengths[a * width + b + 1])
                };
            }
        }
        let (mut a, mut b) = (0, 0);
        while a < n && b < m {
            if middle_before[a] == middle_after[b] {
                pairs.push((prefix + a, prefix + b));
                (a, b) = (a + 1, b + 1);
            } else if lengths[(a + 1) * width + b] >= lengths[a * width + b + 1] {
                a += 1;
            } else {
                b += 1;
            }
        }
    }
    pairs.extend((0..suffix).map(|k| (before.len() - suffix + k, after.len() - suffix + k)));
    pairs
}

/// Runs `then` with `token` appended to the pointer `path` (escaped, RFC
/// 6901 section 3), and takes it off again.
fn at(path: &mut String, token: &str, then: impl FnOnce(&mut String)) {
    let length = path.len();
    path.push('/');
    path.push_str(&token.replace('~', "~0").replace('/', "~1"));
    then(path);
    path.truncate(length);
}

fn add(path: &str, value: &Value) -> Operation {
    Operation {
        op: Op::Add,
        path: path.to_owned(),
        value: Some(value.clone()),
    }
}

fn remove(path: &str) -> Operation {
    Operation {
        op: Op::Remove,
        path: path.to_owned(),
        value: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    /// RFC 6902's `add`, `remove` and `replace`, as a client applies them.
    fn apply(target: &mut Value, operations: &[Operation]) {
        for operation in operations {
            let tokens: Vec<String> = operation
                .path
                .split('/')
                .skip(1)
                .map(|t| t.replace("~1", "/").replace("~0", "~"))
                .collect();
            let Some((last, parents)) = tokens.split_last() else {
                *target = operation.value.clone().unwrap();
                continue;
            };
            let mut parent = &mut *target;
            for token in parents {
                parent = match parent {
                    Value::Object(members) => members.get_mut(token).unwrap(),
                    Value::Array(items) => &mut items[token.parse::<usize>().unwrap()],
                    _ => panic!("{} goes through a scalar", operation.path),
                };
            }
            let value = operation.value.clone();
            match (parent, operation.op) {
                (Value::Object(members), Op::Add | Op::Replace) => {
                    members.insert(last.clone(), value.unwrap());
                }
                (Value::Object(members), Op::Remove) => {
                    members.remove(last).unwrap();
                }
                (Value::Array(items), op) => {
                    let index: usize = last.parse().unwrap();
                    match op {
                        Op::Add => items.insert(index, value.unwrap()),
                        Op::Remove => drop(items.remove(index)),
                        Op::Replace => items[index] = value.unwrap(),
                    }
                }
                _ => panic!("{} names a member of a scalar", operation.path),
            }
        }
    }

    fn patched(from: &Value, to: &Value) -> Vec<Operation> {
        let operations = diff(from, to);
        let mut applied = from.clone();
        apply(&mut applied, &operations);
        assert_eq!(&applied, to, "{operations:#?}");
        operations
    }

    fn written(operations: &[Operation]) -> Value {
        serde_json::to_value(operations).unwrap()
    }

    #[test]
    fn equal_values_need_no_operation() {
        let value = json!({"a": [1, {"b": null}], "c": "d"});
        assert!(diff(&value, &value.clone()).is_empty());
    }

    #[test]
    fn members_are_removed_added_and_replaced_by_path() {
        let operations = patched(
            &json!({"gone": 1, "same": true, "changed": {"x": 1}, "a/b~c": 1}),
            &json!({"same": true, "changed": {"x": 2}, "new": [1], "a/b~c": 2}),
        );
        assert_eq!(
            written(&operations),
            json!([
                {"op": "remove", "path": "/gone"},
                {"op": "replace", "path": "/a~1b~0c", "value": 2},
                {"op": "replace", "path": "/changed/x", "value": 2},
                {"op": "add", "path": "/new", "value": [1]},
            ])
        );
    }

    #[test]
    fn an_element_put_first_is_one_add() {
        let routes = |first: Option<&str>| {
            let mut routes = vec![json!({"path": "/a"}), json!({"path": "/b"})];
            if let Some(path) = first {
                routes.insert(0, json!({"path": path}));
            }
            json!({"routes": routes})
        };
        let operations = patched(&routes(None), &routes(Some("/new")));
        assert_eq!(
            written(&operations),
            json!([{"op": "add", "path": "/routes/0", "value": {"path": "/new"}}])
        );
        let operations = patched(&routes(Some("/old")), &routes(None));
        assert_eq!(
            written(&operations),
            json!([{"op": "remove", "path": "/routes/0"}])
        );
    }

    #[test]
    fn an_element_changed_in_place_is_changed_within() {
        let operations = patched(
            &json!([{"path": "/a", "country": ["FR", "DE"]}, {"path": "/b"}]),
            &json!([{"path": "/a", "country": ["FR", "DE", "ES"]}, {"path": "/b"}]),
        );
        assert_eq!(
            written(&operations),
            json!([{"op": "add", "path": "/0/country/2", "value": "ES"}])
        );
        let operations = patched(&json!([1, 2, 3, 4]), &json!([1, 5, 6, 4, 7]));
        assert_eq!(
            written(&operations),
            json!([
                {"op": "replace", "path": "/1", "value": 5},
                {"op": "replace", "path": "/2", "value": 6},
                {"op": "add", "path": "/4", "value": 7},
            ])
        );
    }

    #[test]
    fn other_types_are_replaced_whole() {
        let operations = patched(&json!({"a": [1]}), &json!({"a": {"0": 1}}));
        assert_eq!(
            written(&operations),
            json!([{"op": "replace", "path": "/a", "value": {"0": 1}}])
        );
        assert_eq!(
            written(&patched(&json!(1), &json!("1"))),
            json!([{"op": "replace", "path": "", "value": "1"}])
        );
    }

    /// Long arrays past the bound still make a patch that applies.
    #[test]
    fn long_arrays_still_patch() {
        let from: Vec<Value> = (0..2100).map(|i| json!(i)).collect();
        let to: Vec<Value> = (0..2100).map(|i| json!(i * 7 % 2101)).collect();
        patched(&Value::from(from), &Value::from(to));
    }

    fn small_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            (0..4i64).prop_map(Value::from),
            "[ab/~]{0,2}".prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 24, 5, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::from),
                proptest::collection::btree_map("[ab/~]{0,2}", inner, 0..4)
                    .prop_map(|members| Value::Object(members.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Whatever the two values, the patch applied to the first gives
        /// the second.
        #[test]
        fn the_patch_applied_gives_the_second_value(from in small_json(), to in small_json()) {
            patched(&from, &to);
        }
    }
}
