// Addresses and history: which page answers an address (the table is
// console.js's), going to one, and paging through an API listing.

import { state } from "./api.js";
import { h } from "./dom.js";

/** Goes to `hash`, keeping `trail` (the keys of the pages before) with the
 * history entry, so Back and Forward keep the page count right. */
function go(hash, trail = []) {
  history.pushState({ trail }, "", hash);
  route();
}

const trail = () => history.state?.trail || [];

function hashParams() {
  const [path, search = ""] = location.hash.slice(1).split("?");
  return { path, params: new URLSearchParams(search) };
}

/** The pages, given once at the start by console.js (which imports every
 * page's module: so no page module imports another's table, and none
 * imports console.js). `open`: [pattern, view] reachable signed out (the
 * invitation's page); `signedIn`: [pattern, view(parts, params, signal)];
 * `beforeEach` runs before any page is chosen; `signedOut` shows the
 * sign-in; `failed(title, error)` shows a view that could not load. */
const pages = { open: [], signedIn: [], beforeEach: () => {}, signedOut: () => {}, failed: () => {} };

function setPages(given) {
  Object.assign(pages, given);
}

function route() {
  pages.beforeEach();
  const { path, params } = hashParams();
  const open = pages.open.find(([pattern]) => pattern.test(path));
  if (open) {
    state.view?.abort();
    state.view = null;
    open[1]();
    return;
  }
  if (!state.token) {
    pages.signedOut();
    return;
  }
  state.view?.abort();
  const controller = new AbortController();
  state.view = controller;
  for (const link of document.querySelectorAll("[data-nav]")) {
    const current = path.startsWith(`/${link.dataset.nav}`);
    if (current) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  for (const [pattern, view] of pages.signedIn) {
    const match = pattern.exec(path);
    if (match) {
      const parts = match.slice(1).map(decodeURIComponent);
      view(parts, params, controller.signal).catch((error) => {
        if (error.name !== "AbortError") pages.failed("This page could not be loaded", error);
      });
      return;
    }
  }
  history.replaceState(null, "", "#/projects");
  route();
}

/** Previous and Next through an API listing by its own cursors: Next
 * follows the page's last key, Previous goes back along the trail. */
function pager(label, start, nextKey, hashFor) {
  const before = trail();
  const previous = h("button", {
    type: "button",
    disabled: !start,
    text: "← Previous",
    onclick: () => {
      const back = before.slice(0, -1);
      go(hashFor(before.at(-1) || ""), back);
    },
  });
  const next = h("button", {
    type: "button",
    disabled: !nextKey,
    text: "Next →",
    onclick: () => go(hashFor(nextKey), [...before, start]),
  });
  return h("nav", { class: "pager", "aria-label": label }, previous, h("span", { text: `Page ${before.length + 1}` }), next);
}

// A project's addresses and where its pages are, which every page of a
// project shares.
const projectPath = (projectId) => `/v1/projects/${encodeURIComponent(projectId)}`;

const revisionHash = (projectId, number) => `#/projects/${encodeURIComponent(projectId)}/revisions/${number}`;

/** "Projects / SLUG / `last`": where a page of a project's is. */
const projectCrumbs = (project, last) =>
  h(
    "p",
    { class: "crumbs" },
    h("a", { href: "#/projects", text: "Projects" }),
    " / ",
    h("a", { href: `#/projects/${encodeURIComponent(project.id)}`, text: project.slug }),
    last ? ` / ${last}` : null,
  );

export { go, hashParams, pager, projectCrumbs, projectPath, revisionHash, route, setPages };
