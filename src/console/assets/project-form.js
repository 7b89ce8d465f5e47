// A project's settings, one table for every place that shows them: the
// project's page (each in words, by group), its edit and create forms (an
// input per member, named as the API names it in `params[].param`), and
// what someone else changed meanwhile (in words again). A member added to
// the API is added here once.

import { field, h, yesNo } from "./dom.js";
import { checkGroup, linesOf, placeForWord, rowList } from "./forms.js";

// The enums, exactly the API's (src/http/openapi.json, ProjectUpdateInput
// and its rules' schemas).
const TYPES = ["proxy", "ai_analytics", "mcp"];
const SEVERITIES = ["DEBUG", "INFO", "WARNING", "ERROR"];
const SDK_POSITIONS = ["prepend", "append"];
const AUTOCAPTURE = ["pageview", "spa_pageview", "engagement", "click", "form", "scroll"];
const WINDOWS = ["1s", "10s", "60s"];
const RATE_KEYS = [
  ["ip", "IP address"],
  ["ua", "User agent"],
];
const METHODS = ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "TRACE"].map((m) => [m, m]);
const CONTINENTS = [
  ["AF", "Africa"],
  ["AN", "Antarctica"],
  ["AS", "Asia"],
  ["EU", "Europe"],
  ["NA", "North America"],
  ["OC", "Oceania"],
  ["SA", "South America"],
];

/** A new project's settings as createProject sets them when not given
 * (the input schema's defaults): the create form starts from these and
 * sends only what differs. */
const DEFAULTS = {
  slug: "",
  type: "proxy",
  description: "",
  external_project_url: "",
  log_severity: "INFO",
  cache: false,
  edgee_behind_proxy_cache: false,
  enforce_no_store_policy: false,
  override_cache_enabled: false,
  override_cache: [],
  force_https: true,
  proxy_only: false,
  proxy_only_path_regex: "",
  password_protection: false,
  forwarded_headers: [],
  inject_sdk: false,
  inject_sdk_position: "append",
  cookieless: false,
  autocapture: Object.fromEntries(AUTOCAPTURE.map((name) => [name, false])),
  trusted_ips: [],
  blocked_ips: [],
  rate_limiting_enabled: false,
  rate_limiting: [],
  cookie_name: "",
  cookie_domain: "",
  cookie_whitelist: [],
};

/** A rule's conditions in words: "request methods GET, HEAD; request
 * headers present: accept". Empty conditions read "always". */
function conditionsText(conditions) {
  const parts = [];
  for (const [name, value] of Object.entries(conditions || {})) {
    const label = name.replaceAll("_", " ");
    if (Array.isArray(value)) {
      if (value.length) parts.push(`${label} ${value.join(", ")}`);
    } else if (value && typeof value === "object") {
      const { present = [], absent = [], values = {} } = value;
      if (present.length) parts.push(`${label} present: ${present.join(", ")}`);
      if (absent.length) parts.push(`${label} absent: ${absent.join(", ")}`);
      for (const [key, wanted] of Object.entries(values)) parts.push(`${label} ${key} = ${JSON.stringify(wanted)}`);
    } else if (value !== "" && value !== null && value !== undefined && value !== false) {
      parts.push(value === true ? label : `${label} ${value}`);
    }
  }
  return parts.join("; ") || "always";
}

/** `value` without its empty members (empty strings, lists and objects,
 * false, absent), at any depth: what a person reads and types. */
function withoutEmpty(value) {
  if (Array.isArray(value)) return value;
  if (!value || typeof value !== "object") return value;
  const kept = {};
  for (const [name, member] of Object.entries(value)) {
    const inner = withoutEmpty(member);
    const empty =
      inner === undefined ||
      inner === null ||
      inner === "" ||
      inner === false ||
      (Array.isArray(inner) && !inner.length) ||
      (typeof inner === "object" && !Array.isArray(inner) && !Object.keys(inner).length);
    if (!empty) kept[name] = inner;
  }
  return kept;
}

/** A whole number typed in a text field, as the API takes it: absent when
 * blank (the API's default), the text itself when it is no integer (so
 * the API's refusal names the field). */
function integerOf(input) {
  const text = input.value.trim();
  if (!text) return undefined;
  return /^-?\d+$/.test(text) ? Number(text) : text;
}

const integerInput = (id, value) =>
  h("input", { id, type: "text", inputmode: "numeric", autocomplete: "off", class: "number", value: value ?? "" });

/** One labelled input of a member: `make(value, id)` builds it,
 * `read(input)` answers the member's value. */
const single = (make, read) => ({
  editor: (value, id, param, label) => {
    const input = make(value, id);
    return { node: field(label, input, param), inputs: () => ({ [param]: input }), read: () => read(input), problems: () => [] };
  },
});

const flag = {
  words: yesNo,
  ...single(
    (value, id) => h("input", { id, type: "checkbox", checked: Boolean(value) }),
    (input) => input.checked,
  ),
};

/** Free text; `attrs` are the input's (a pattern, a placeholder). */
const text = (attrs = {}, trim = false) => ({
  words: (value) => value,
  ...single(
    (value, id) => h("input", { id, type: "text", autocomplete: "off", spellcheck: "false", value: value ?? "", ...attrs }),
    (input) => (trim ? input.value.trim() : input.value),
  ),
});

const prose = {
  words: (value) => value,
  ...single(
    (value, id) => h("textarea", { id, rows: 2, text: value ?? "" }),
    (input) => input.value,
  ),
};

/** One of `values`; a stored value the API no longer takes is shown too,
 * marked, so the form never shows what is not stored. */
const choice = (values) => ({
  words: (value) => value,
  ...single(
    (value, id) =>
      h(
        "select",
        { id },
        values.map((v) => h("option", { value: v, selected: v === value, text: v })),
        value && !values.includes(value) ? h("option", { value, selected: true, text: `${value} (stored, not accepted any more)` }) : null,
      ),
    (input) => input.value,
  ),
});

/** A list of strings, one a line. */
const lines = (placeholder) => ({
  oneALine: true,
  words: (value) => value || [],
  ...single(
    (value, id) => h("textarea", { id, rows: 4, spellcheck: "false", placeholder, text: (value || []).join("\n") }),
    (input) => linesOf(input.value),
  ),
});

const autocapture = {
  words: (value) =>
    Object.keys(value || {})
      .filter((name) => value[name])
      .map((name) => name.replaceAll("_", " ")),
  editor: (value, id, param, label) => {
    const chosen = AUTOCAPTURE.filter((name) => value?.[name]);
    const group = checkGroup(label, AUTOCAPTURE.map((name) => [name, name.replaceAll("_", " ")]), chosen, id, param);
    return {
      node: group.node,
      inputs: () => ({ [param]: group.input }),
      read: () => {
        const on = group.read();
        return Object.fromEntries(AUTOCAPTURE.map((name) => [name, on.includes(name)]));
      },
      problems: () => [],
    };
  },
};

/** A list of structured items edited as rows (forms.js, `rowList`):
 * `row(item, id)` answers `{ node, inputs, read }`; `check(item)` a
 * problem with an item's member before anything is sent. */
const rows = ({ itemName, addLabel, blank, row, words, check = () => [] }) => ({
  words: (value) => (value || []).map(words),
  editor: (value, id, param, label) => {
    const list = rowList({ param, itemName, items: value || [], makeRow: row, blank, addLabel });
    const add = list.node.querySelector(".row-add");
    add.id = `${id}-add`;
    // The API's word on the list as a whole (its length, say) is kept by
    // its Add button, and shown under the legend.
    const listSaid = placeForWord(add, `${id}-error`, param);
    return {
      node: h("fieldset", { class: "row-group" }, h("legend", { text: label }), listSaid, list.node),
      inputs: () => ({ [param]: add, ...list.inputs() }),
      read: list.read,
      problems: () => list.read().flatMap((item, index) => check(item).map(([member, message]) => ({ param: `${param}[${index}].${member}`, message }))),
    };
  },
});

const forwardedHeaders = rows({
  itemName: "Header",
  addLabel: "Add a header",
  blank: () => ({ name: "", value: "" }),
  words: (header) => `${header.name}: ${header.value}`,
  row: (header, id) => {
    const name = h("input", { id: `${id}-name`, type: "text", autocomplete: "off", spellcheck: "false", value: header.name ?? "" });
    const value = h("input", { id: `${id}-value`, type: "text", autocomplete: "off", spellcheck: "false", value: header.value ?? "" });
    return {
      node: h("div", { class: "row-fields" }, field("Name", name, "name"), field("Value", value, "value")),
      inputs: { name, value },
      read: () => ({ name: name.value.trim(), value: value.value }),
    };
  },
});

/** A cache rule's conditions as a person types them: JSON without the
 * empty members; blank is none. Answers the object, or the text when it
 * is not a JSON object (said at the field before anything is sent). */
function conditionsOf(textarea) {
  const typed = textarea.value.trim();
  if (!typed) return {};
  try {
    const parsed = JSON.parse(typed);
    return parsed && typeof parsed === "object" && !Array.isArray(parsed) ? parsed : typed;
  } catch {
    return typed;
  }
}

const cacheRules = rows({
  itemName: "Cache rule",
  addLabel: "Add a cache rule",
  blank: () => ({ path: "", regex: false, ttl: 3600, swr: 0, pass: false, rank: 1, conditions: {} }),
  words: (rule) =>
    `#${rule.rank} ${rule.path}${rule.regex ? " (regex)" : ""}: ${rule.pass ? "pass" : `ttl ${rule.ttl} s, swr ${rule.swr} s`}; when ${conditionsText(rule.conditions)}`,
  row: (rule, id) => {
    const path = h("input", { id: `${id}-path`, type: "text", autocomplete: "off", spellcheck: "false", value: rule.path ?? "" });
    const regex = h("input", { id: `${id}-regex`, type: "checkbox", checked: Boolean(rule.regex) });
    const ttl = integerInput(`${id}-ttl`, rule.ttl);
    const swr = integerInput(`${id}-swr`, rule.swr);
    const pass = h("input", { id: `${id}-pass`, type: "checkbox", checked: Boolean(rule.pass) });
    const rank = integerInput(`${id}-rank`, rule.rank);
    const shown = withoutEmpty(rule.conditions || {});
    const conditions = h("textarea", {
      id: `${id}-conditions`,
      class: "json",
      rows: 3,
      spellcheck: "false",
      placeholder: '{"request_methods": ["GET"], "request_headers": {"present": ["accept"]}}',
      text: typeof shown === "string" ? shown : Object.keys(shown).length ? JSON.stringify(shown, null, 1) : "",
    });
    return {
      node: h(
        "div",
        { class: "row-fields" },
        field("Path", path, "path"),
        field("Path is a regex", regex, "regex"),
        field("TTL (s)", ttl, "ttl"),
        field("Stale while revalidate (s)", swr, "swr"),
        field("Pass (never cache)", pass, "pass"),
        field("Rank", rank, "rank"),
        h(
          "div",
          { class: "wide-field" },
          field("Conditions (JSON)", conditions, "conditions"),
          h("p", {
            class: "muted hint",
            text: "Blank: always. Members: request_methods, response_status (lists); request_headers, request_cookies, request_query_params, response_headers (each with present, absent, values).",
          }),
        ),
      ),
      inputs: { path, regex, ttl, swr, pass, rank, conditions },
      read: () => ({
        path: path.value,
        regex: regex.checked,
        ttl: integerOf(ttl),
        swr: integerOf(swr),
        pass: pass.checked,
        rank: integerOf(rank),
        conditions: conditionsOf(conditions),
      }),
    };
  },
  check: (rule) => (typeof rule.conditions === "string" ? [["conditions", "must be a JSON object, such as {\"request_methods\": [\"GET\"]}"]] : []),
});

const rateRules = rows({
  itemName: "Rate limiting rule",
  addLabel: "Add a rate limiting rule",
  blank: () => ({ rank: 1, limit: 10, window: "10s", block_duration: 60, key: ["ip"], conditions: {} }),
  words: (rule) =>
    `#${rule.rank} ${rule.limit} requests per ${rule.window} by ${(rule.key || []).join(", ")}, blocked ${rule.block_duration} s; when ${conditionsText(rule.conditions)}`,
  row: (rule, id) => {
    const c = rule.conditions || {};
    const rank = integerInput(`${id}-rank`, rule.rank);
    const limit = integerInput(`${id}-limit`, rule.limit);
    const per = choice(WINDOWS).editor(rule.window || "10s", `${id}-window`, "window", "Window");
    const block = integerInput(`${id}-block`, rule.block_duration);
    const key = checkGroup("Counted by", RATE_KEYS, rule.key || [], `${id}-key`, "key");
    const path = h("input", { id: `${id}-path`, type: "text", autocomplete: "off", spellcheck: "false", value: c.path ?? "" });
    const regex = h("input", { id: `${id}-regex`, type: "checkbox", checked: Boolean(c.regex) });
    const method = checkGroup("Methods (none: any)", METHODS, c.method || [], `${id}-method`, "conditions.method");
    const continent = checkGroup("Continents (none: any)", CONTINENTS, c.continent || [], `${id}-continent`, "conditions.continent");
    const country = h("input", { id: `${id}-country`, type: "text", autocomplete: "off", spellcheck: "false", placeholder: "FR DE", value: (c.country || []).join(" ") });
    return {
      node: h(
        "div",
        { class: "row-fields" },
        field("Rank", rank, "rank"),
        field("Requests per window", limit, "limit"),
        per.node,
        field("Blocked for (s)", block, "block_duration"),
        key.node,
        field("When the path is", path, "conditions.path"),
        field("Path is a regex", regex, "conditions.regex"),
        method.node,
        continent.node,
        field("Countries (codes, space apart; none: any)", country, "conditions.country"),
      ),
      inputs: {
        rank,
        limit,
        window: per.inputs().window,
        block_duration: block,
        key: key.input,
        conditions: path,
        "conditions.path": path,
        "conditions.regex": regex,
        "conditions.method": method.input,
        "conditions.continent": continent.input,
        "conditions.country": country,
      },
      read: () => ({
        rank: integerOf(rank),
        limit: integerOf(limit),
        window: per.read(),
        block_duration: integerOf(block),
        key: key.read(),
        conditions: withoutEmpty({
          path: path.value,
          regex: regex.checked,
          method: method.read(),
          continent: continent.read(),
          country: country.value
            .split(/[\s,]+/)
            .filter(Boolean)
            .map((code) => code.toUpperCase()),
        }),
      }),
    };
  },
});

/** The groups, as the project's page shows them: [member, label, kind]. */
const GROUPS = [
  {
    id: "overview",
    title: "Overview",
    members: [
      ["slug", "Slug", text({ required: true, maxlength: 63, pattern: "[a-z0-9]([a-z0-9-]*[a-z0-9])?", title: "a-z, 0-9 and -" }, true)],
      ["type", "Type", choice(TYPES)],
      ["description", "Description", prose],
      ["external_project_url", "External address", text({ type: "url", placeholder: "https://www.example.com" }, true)],
      ["log_severity", "Log severity", choice(SEVERITIES)],
    ],
  },
  {
    id: "caching",
    title: "Caching",
    members: [
      ["cache", "Cache", flag],
      ["edgee_behind_proxy_cache", "Behind a proxy cache", flag],
      ["enforce_no_store_policy", "Enforce no-store policy", flag],
      ["override_cache_enabled", "Cache rules enabled", flag],
      ["override_cache", "Cache rules", cacheRules],
    ],
  },
  {
    id: "proxying",
    title: "Proxying",
    members: [
      ["force_https", "Force HTTPS", flag],
      ["proxy_only", "Proxy only", flag],
      ["proxy_only_path_regex", "Proxy-only paths (regex)", text({ placeholder: "^/api/" })],
      ["password_protection", "Password protection", flag],
      ["forwarded_headers", "Forwarded headers", forwardedHeaders],
    ],
  },
  {
    id: "sdk",
    title: "SDK",
    members: [
      ["inject_sdk", "Inject the SDK", flag],
      ["inject_sdk_position", "Position", choice(SDK_POSITIONS)],
      ["cookieless", "Cookieless", flag],
      ["autocapture", "Autocapture", autocapture],
    ],
  },
  {
    id: "ip",
    title: "IP rules",
    members: [
      ["trusted_ips", "Trusted addresses", lines("10.0.0.0/8\n2001:db8::1")],
      ["blocked_ips", "Blocked addresses", lines("203.0.113.7")],
    ],
  },
  {
    id: "rate",
    title: "Rate limiting",
    members: [
      ["rate_limiting_enabled", "Rate limiting enabled", flag],
      ["rate_limiting", "Rate limiting rules", rateRules],
    ],
  },
  {
    id: "cookies",
    title: "Cookies",
    members: [
      ["cookie_name", "Cookie name", text()],
      ["cookie_domain", "Cookie domain", text({ placeholder: ".example.com" })],
      ["cookie_whitelist", "Kept cookies", lines("session")],
    ],
  },
];

/** Every member the forms edit: name -> { label, group, kind }. */
const MEMBERS = new Map(GROUPS.flatMap((group) => group.members.map(([name, label, kind]) => [name, { label, group, kind }])));

/** [label, words] of a group's members in `project`, for `settings`. */
const settingsWords = (group, project) => group.members.map(([name, label, kind]) => [label, kind.words(project[name])]);

/** A member's value in words, on one line: "Yes", "none", "not set". */
function inWords(name, value) {
  const words = MEMBERS.get(name).kind.words(value);
  if (Array.isArray(words)) return words.length ? words.join("; ") : "none";
  return words === "" || words === null || words === undefined ? "not set" : String(words);
}

/** The form of `project`'s settings, a card per group (ids start with
 * `prefix`). Answers `{ cards, read, inputs, problems }`: `read()` every
 * member's value as the API takes it; `inputs()` the inputs by the API's
 * names (`override_cache[2].ttl`); `problems()` what cannot be sent, in
 * the shape of the API's `params`. */
function settingsForm(project, prefix) {
  const editors = [];
  const cards = GROUPS.map((group) =>
    h(
      "section",
      { class: "card", id: `${prefix}-${group.id}`, "aria-labelledby": `${prefix}-${group.id}-title` },
      h("h2", { id: `${prefix}-${group.id}-title`, text: group.title }),
      h(
        "div",
        { class: "form-fields" },
        group.members.map(([name, label, kind]) => {
          const editor = kind.editor(project[name], `${prefix}-${name}`, name, label);
          editors.push([name, editor]);
          return editor.node;
        }),
      ),
    ),
  );
  return {
    cards,
    read: () => Object.fromEntries(editors.map(([name, editor]) => [name, editor.read()])),
    inputs: () => Object.assign({}, ...editors.map(([, editor]) => editor.inputs())),
    problems: () => editors.flatMap(([, editor]) => editor.problems()),
  };
}

/** The members whose values differ between two `read()`s. */
const changedMembers = (now, before) => Object.keys(now).filter((name) => JSON.stringify(now[name]) !== JSON.stringify(before[name]));

export { changedMembers, conditionsText, DEFAULTS, GROUPS, inWords, MEMBERS, settingsForm, settingsWords };
