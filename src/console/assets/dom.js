// The page, built from parts: elements from `h` (never from markup
// strings), the view on screen, notices, confirmations, labelled fields
// with the API's word on each.

/** An element: `attrs` are attributes ("class", "text" and on* handlers
 * are special), `children` are nodes or strings (strings become text). */
function h(tag, attrs = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === false || value === null || value === undefined) continue;
    if (name === "class") element.className = value;
    else if (name === "text") element.textContent = value;
    else if (name.startsWith("on")) element.addEventListener(name.slice(2), value);
    else element.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : String(child));
  }
  return element;
}

const $ = (id) => document.getElementById(id);

const main = () => $("main");

/** Puts `nodes` on screen as the view, focusing its heading so keyboard
 * and screen-reader users start there. */
function show(...nodes) {
  const area = main();
  area.replaceChildren(...nodes.flat().filter((node) => node !== null && node !== undefined));
  area.removeAttribute("aria-busy");
  const heading = area.querySelector("h1");
  if (heading) {
    heading.setAttribute("tabindex", "-1");
    heading.focus({ preventScroll: true });
  }
}

function loading(what) {
  main().setAttribute("aria-busy", "true");
  main().replaceChildren(h("p", { class: "loading", role: "status", text: `Loading ${what}…` }));
}

/** A short message under the header (for example "Revision 3 is now active."). */
function notify(text) {
  const notice = $("notice");
  notice.textContent = text;
  notice.hidden = !text;
}

function when(timestamp) {
  if (!timestamp) return h("span", { class: "muted", text: "never" });
  const text = `${timestamp.slice(0, 10)} ${timestamp.slice(11, 16)} UTC`;
  return h("time", { datetime: timestamp, title: timestamp, text });
}

const yesNo = (flag) => (flag ? "Yes" : "No");

/** "1 route", "2 routes", "no route": a number of things in words. */
const count = (n, thing) => (n === 0 ? `no ${thing}` : `${n} ${thing}${n === 1 ? "" : "s"}`);

function errorBox(text) {
  return h("div", { class: "error", role: "alert" }, h("strong", { text: "Not done. " }), text);
}

/** A page or a part of one that could not be read: why, and a way to
 * try again (`retry`, which reads it anew). */
function loadFailure(text, retry) {
  return h(
    "div",
    { class: "error", role: "alert" },
    h("strong", { text: "Not loaded. " }),
    text,
    h("p", {}, h("button", { type: "button", class: "retry", text: "Try again", onclick: retry })),
  );
}

/** Asks before a change; answers whether the person confirmed. */
function confirmAction(title, text, confirmLabel) {
  const dialog = $("confirm");
  $("confirm-title").textContent = title;
  $("confirm-text").textContent = text;
  $("confirm-ok").textContent = confirmLabel;
  dialog.returnValue = "";
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true });
    dialog.showModal();
    $("confirm-cancel").focus();
  });
}

/** A labelled list of settings: [label, value] pairs; a value is text,
 * a node, or a list (shown one item a line, or "none"). */
function settings(id, title, pairs) {
  return h("section", { class: "card", "aria-labelledby": id }, h("h2", { id, text: title }), settingsList(pairs));
}

/** The list of `settings` alone, for a part with its own heading. */
function settingsList(pairs) {
  const list = h("dl", { class: "settings" });
  for (const [label, value] of pairs) {
    let shown = value;
    if (Array.isArray(value)) {
      shown = value.length ? h("ul", { class: "plain" }, value.map((item) => h("li", {}, item))) : h("span", { class: "muted", text: "none" });
    } else if (value === "" || value === null || value === undefined) {
      shown = h("span", { class: "muted", text: "not set" });
    }
    list.append(h("dt", { text: label }), h("dd", {}, shown));
  }
  return list;
}

/** A Copy button (with `attrs`) for what `text()` answers; `said` tells
 * whether it was copied. `select`, when given, selects the text first, for those who
 * copy it by hand. */
function copyButton(attrs, text, said, select) {
  const copy = async () => {
    select?.();
    try {
      await navigator.clipboard.writeText(text());
      said.textContent = "Copied.";
    } catch {
      said.textContent = "Select the text and copy it (Ctrl+C or ⌘C).";
    }
  };
  return h("button", { type: "button", text: "Copy", ...attrs, onclick: copy });
}

/** A labelled field with a place for the API's word on it (its
 * `params[].param` is `param`): `input` needs an id. */
const fieldErrors = new WeakMap();

function field(labelText, input, param) {
  const said = h("span", { class: "field-error", id: `${input.id}-error`, "data-param": param });
  fieldErrors.set(input, said);
  input.setAttribute("aria-describedby", said.id);
  return h("span", { class: "field" }, h("label", { for: input.id, text: labelText }), input, said);
}

function clearFieldErrors(inputs) {
  for (const input of Object.values(inputs)) {
    input.removeAttribute("aria-invalid");
    const said = fieldErrors.get(input);
    if (said) said.textContent = "";
  }
}

export { $, clearFieldErrors, count, confirmAction, copyButton, errorBox, field, fieldErrors, h, loadFailure, loading, notify, settings, settingsList, show, when, yesNo };
