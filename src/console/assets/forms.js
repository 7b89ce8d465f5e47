// The parts of the edit forms (a project's settings, a revision's backends
// and routes): lists of rows a person adds to, removes from and reorders,
// each row's inputs named as the API names them in `params[].param`
// (`routes[2].path`), so that a refusal lands next to its field
// (session.js, `refusal`).

import { fieldErrors, h } from "./dom.js";

let rowIds = 0;

/** An editable list of rows. `makeRow(item)` answers `{ node, inputs,
 * read }` for one item: `inputs` maps the item's member names to their
 * inputs, `read()` answers the item as the API takes it. `blank()` is a
 * new row's item. Each row has "Move up", "Move down" and "Remove"
 * buttons, named with the row's number for screen readers; focus stays on
 * what the person acted on. `onChange()`, when given, runs after each
 * row the person adds, removes or moves.
 *
 * Answers `{ node, read, inputs }`: `read()` the items in the list's
 * order, `inputs()` every row's inputs keyed by the API's names
 * (`${param}[${i}].${member}`), in the order they are now. */
function rowList({ param, itemName, items, makeRow, blank, addLabel, onChange = () => {} }) {
  const list = h("ol", { class: "rows", "aria-label": `${itemName}s` });
  const rows = [];
  const empty = h("p", { class: "empty", text: `No ${itemName.toLowerCase()}s.` });

  const renumber = () => {
    rows.forEach((row, index) => {
      row.title.textContent = `${itemName} ${index + 1}`;
      row.up.disabled = index === 0;
      row.down.disabled = index === rows.length - 1;
      for (const [button, verb] of [
        [row.up, "Move up"],
        [row.down, "Move down"],
        [row.remove, "Remove"],
      ]) {
        button.setAttribute("aria-label", `${verb} ${itemName.toLowerCase()} ${index + 1}`);
      }
    });
    empty.hidden = rows.length > 0;
  };
  const move = (row, by) => {
    const from = rows.indexOf(row);
    const to = from + by;
    if (to < 0 || to >= rows.length) return;
    rows.splice(from, 1);
    rows.splice(to, 0, row);
    if (by < 0) list.insertBefore(row.node, rows[to + 1].node);
    else list.insertBefore(row.node, rows[to - 1].node.nextSibling);
    renumber();
    // Keyboard users keep moving with the same button until the end.
    const pressed = by < 0 ? row.up : row.down;
    (pressed.disabled ? (by < 0 ? row.down : row.up) : pressed).focus();
    onChange();
  };
  const add = (item, focus) => {
    const made = makeRow(item, `row-${(rowIds += 1)}`);
    const row = {
      ...made,
      title: h("h3", { class: "row-title" }),
      up: h("button", { type: "button", class: "row-up", text: "↑" }),
      down: h("button", { type: "button", class: "row-down", text: "↓" }),
      remove: h("button", { type: "button", class: "row-remove danger", text: "Remove" }),
    };
    row.up.addEventListener("click", () => move(row, -1));
    row.down.addEventListener("click", () => move(row, 1));
    row.remove.addEventListener("click", () => {
      const at = rows.indexOf(row);
      rows.splice(at, 1);
      row.node.remove();
      renumber();
      const next = rows[at] || rows[at - 1];
      (next ? next.remove : addButton).focus();
      onChange();
    });
    row.node = h("li", { class: "row" }, h("div", { class: "row-head" }, row.title, row.up, row.down, row.remove), made.node);
    rows.push(row);
    list.append(row.node);
    renumber();
    if (focus) Object.values(made.inputs)[0]?.focus();
  };
  const addButton = h("button", {
    type: "button",
    class: "row-add",
    text: addLabel,
    onclick: () => {
      add(blank(), true);
      onChange();
    },
  });
  for (const item of items) add(item, false);
  renumber();
  return {
    node: h("div", { class: "row-list", "data-param": param }, list, empty, addButton),
    read: () => rows.map((row) => row.read()),
    inputs: () => {
      const named = {};
      rows.forEach((row, index) => {
        for (const [member, input] of Object.entries(row.inputs)) named[`${param}[${index}].${member}`] = input;
      });
      return named;
    },
  };
}

/** Text a person types for a list of strings, one a line: the lines that
 * are not blank, trimmed. */
const linesOf = (text) =>
  text
    .split("\n")
    .map((line) => line.trim())
    .filter(Boolean);

/** The place for the API's word on `input` (its `params[].param` is
 * `param`) where `field` cannot put it: `refusal` writes there and marks
 * and focuses `input`. */
function placeForWord(input, id, param) {
  const said = h("span", { class: "field-error", id, "data-param": param });
  fieldErrors.set(input, said);
  input.setAttribute("aria-describedby", id);
  return said;
}

/** Checkboxes for a list of values (`choices`: [value, label] pairs), the
 * `chosen` ones checked: a fieldset whose legend names it, with a place
 * for the API's word on it (`param`), kept by its first box (so `refusal`
 * marks and focuses that one). A chosen value not among `choices` gets a
 * box too, so that saving keeps it unless unchecked. Answers `{ node,
 * input, read }`: `read()` the checked values, in the boxes' order. */
function checkGroup(legend, choices, chosen, id, param) {
  const all = [...choices, ...chosen.filter((value) => !choices.some(([known]) => known === value)).map((value) => [value, value])];
  const boxes = all.map(([value], index) => h("input", { type: "checkbox", id: `${id}-${index}`, value, checked: chosen.includes(value) }));
  const said = placeForWord(boxes[0], `${id}-error`, param);
  for (const box of boxes) box.setAttribute("aria-describedby", said.id);
  return {
    node: h(
      "fieldset",
      { class: "checks" },
      h("legend", { text: legend }),
      boxes.map((box, index) => h("span", { class: "check" }, box, h("label", { for: box.id, text: all[index][1] }))),
      said,
    ),
    input: boxes[0],
    read: () => boxes.filter((box) => box.checked).map((box) => box.value),
  };
}

export { checkGroup, linesOf, placeForWord, rowList };
