// Rollouts (docs/rollouts.md): a revision activated in stages. The
// current or last rollout and the past ones on a project's page, a
// rollout's own page (#/projects/ID/rollouts/N) with its stages, their
// edges' health and the Pause / Resume / Promote / Abort buttons, and the
// "Roll out…" form of a revision's page.

import { api, idempotencyKeyFor, query, roleIn } from "./api.js";
import { clearFieldErrors, confirmAction, errorBox, field, fieldErrors, h, loading, notify, settingsList, show, when } from "./dom.js";
import { go, projectCrumbs, projectPath, revisionHash } from "./nav.js";
import { endSessionOn, explain, loadOrganizations, organizationName } from "./session.js";

const rolloutHash = (projectId, number) => `#/projects/${encodeURIComponent(projectId)}/rollouts/${number}`;

const rolloutPath = (projectId, number) => `${projectPath(projectId)}/rollouts/${number}`;

/** How often a rollout still going on is read again: its edges' health
 * is not in the feed, and a step should show within a few seconds. */
const REREAD_MS = 2000;

const ENDED = new Set(["succeeded", "rolled_back", "aborted"]);

/** A state in words, as the terminal says it ("rolled back"). */
const stateWords = (state) => state.replace("_", " ");

/** How far a stage of the plan reaches: "1 edge", "5 edges", "10%". */
const reach = (stage) => (stage.edges !== undefined ? `${stage.edges} edge${stage.edges === 1 ? "" : "s"}` : `${stage.percent}%`);

/** "42 s", "3 min 05 s", "1 h 02 min". */
function span(seconds) {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, "0")} s`;
  return `${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, "0")} min`;
}

/** Where a rollout going on stands now: the bake's time left (the
 * service's `bake_ends_at`), or the time left for its edges to report
 * healthy before it fails. */
function standing(rollout, now = Date.now()) {
  const left = (Date.parse(rollout.bake_ends_at) - now) / 1000;
  const where = `Stage ${rollout.stage} of ${rollout.plan.stages.length}`;
  if (rollout.state === "paused") return `${where}, paused: it does not go on until resumed.`;
  if (Number.isNaN(left)) return `${where}.`;
  if (left > 0) return `${where}: bake ${span(left)} left of ${span(rollout.plan.bake_seconds)}.`;
  return `${where}: baked; waiting for healthy edges (it fails in ${span(rollout.plan.report_timeout_seconds + left)}).`;
}

/** The healthy edges so far against those the stage needs to go on (the
 * stages reached, as the service counts them). */
function healthLine(rollout) {
  const reached = rollout.stages.filter((stage) => stage.number <= rollout.stage);
  const edges = reached.reduce((sum, stage) => sum + stage.edge_count, 0);
  const healthy = reached.reduce((sum, stage) => sum + stage.healthy, 0);
  const needed = Math.ceil((edges * rollout.plan.min_healthy_percent) / 100);
  return `Healthy: ${healthy} of ${edges} edges so far (needs ${needed}); failures tolerated: ${rollout.plan.max_failures}.`;
}

/** An edge's health in a mark and a word (not by colour alone). */
const HEALTH = { healthy: "✓ healthy", failed: "✗ failed", pending: "… pending", waiting: "· waiting" };

/** One stage: how far it reaches, its state, each edge with its health. */
function stageItem(rollout, stage, level) {
  const planned = rollout.plan.stages[stage.number - 1];
  return h(
    "li",
    { class: `stage ${stage.state}`, "data-stage": stage.number },
    h(`h${level}`, { text: `Stage ${stage.number} (${planned ? reach(planned) : "?"}): ${stage.state}` }),
    stage.edges?.length
      ? h(
          "ul",
          { class: "stage-edges" },
          stage.edges.map((edge) =>
            h(
              "li",
              { class: `edge ${edge.health}`, "data-edge": edge.name },
              h("span", { class: "health", text: HEALTH[edge.health] || edge.health }),
              ` ${edge.name}`,
              edge.revision !== null && edge.revision !== undefined ? h("span", { class: "muted", text: ` on revision ${edge.revision}` }) : null,
              edge.canary ? h("span", { class: "muted", text: " (canary)" }) : null,
            ),
          ),
        )
      : h("p", { class: "muted", text: "No edge." }),
  );
}

/** Why a rollout was rolled back, and each failed edge's report. */
function whyRolledBack(rollout) {
  if (!rollout.reason && !rollout.failed_edges?.length) return null;
  return h(
    "div",
    { class: "rollback-reason", role: "note" },
    rollout.reason ? h("p", {}, h("strong", { text: "Reason: " }), rollout.reason) : null,
    rollout.failed_edges?.length
      ? h(
          "ul",
          { class: "failed-edges", "aria-label": "Failed edges" },
          rollout.failed_edges.map((edge) =>
            h(
              "li",
              { class: "edge failed", "data-edge": edge.name },
              `${edge.name} on revision ${edge.revision}: ${edge.status}${edge.healthy === false ? ", unhealthy" : ""}${edge.error ? `: ${edge.error}` : ""} `,
              when(edge.reported_at),
            ),
          ),
        )
      : null,
  );
}

/** What a rollout's end means for the edges. */
function outcome(rollout) {
  if (rollout.state === "succeeded") return `Succeeded: revision ${rollout.revision} is active.`;
  return `${rollout.state === "aborted" ? "Aborted" : "Rolled back"}: every edge is back on revision ${rollout.previous_revision}.`;
}

/** The buttons of a rollout going on, for those who may activate; the
 * reason there are none for a member. */
function controls(project, rollout, status, refresh, signal) {
  if (ENDED.has(rollout.state)) return null;
  if (roleIn(project.organization_id) === "member") {
    return h("p", { class: "muted", text: `Your role in ${organizationName(project.organization_id)} is member: you can follow rollouts; pausing, resuming, promoting or aborting one needs an editor or an admin.` });
  }
  const button = (action, label, extra = {}) =>
    h("button", { type: "button", class: `rollout-${action}`, text: label, onclick: () => act(project, rollout, action, status, refresh, signal), ...extra });
  const last = rollout.stage >= rollout.plan.stages.length;
  return h(
    "div",
    { class: "toolbar rollout-actions" },
    rollout.state === "running" ? button("pause", "Pause") : button("resume", "Resume"),
    button("promote", last ? "Promote: activate now" : `Promote to stage ${rollout.stage + 1}`),
    button("abort", "Abort", { class: "rollout-abort danger" }),
  );
}

const DONE = { pause: "paused", resume: "resumed", promote: "promoted", abort: "aborted" };

async function act(project, rollout, action, status, refresh, signal) {
  if (action === "abort") {
    const confirmed = await confirmAction(
      `Abort rollout ${rollout.number}?`,
      `Every edge of ${project.slug} goes back to revision ${rollout.previous_revision}, and revision ${rollout.revision} is not activated.`,
      `Abort rollout ${rollout.number}`,
    );
    if (!confirmed) return;
  }
  status.replaceChildren(h("p", { class: "loading", role: "status", text: `Asking to ${action} rollout ${rollout.number}…` }));
  try {
    await api("POST", `${rolloutPath(project.id, rollout.number)}/${action}`, { signal });
    notify(`Rollout ${rollout.number} of ${project.slug} was ${DONE[action]}.`);
    status.replaceChildren();
    await refresh();
  } catch (error) {
    if (error.name === "AbortError" || endSessionOn(error)) return;
    status.replaceChildren(errorBox(explain(error, "control rollouts", project.organization_id)));
  }
}

/** A rollout in full, kept current: read again every REREAD_MS while it
 * goes on, its countdown redrawn every second; on its `own` page its
 * heading links nowhere. Answers the element. */
function rolloutPanel(project, first, signal, { own = false } = {}) {
  const panel = h("section", { class: "rollout", "aria-labelledby": "s-rollout", "data-rollout": first.number });
  // Under the page's h1 on its own page, under "Rollouts" (h2) on the project's.
  const level = own ? 2 : 3;
  const status = h("div", { class: "rollout-status" });
  let rollout = first;
  let timer = null;
  const stop = () => clearTimeout(timer);
  signal.addEventListener("abort", stop);
  const draw = () => {
    const title = `Rollout ${rollout.number}: revision ${rollout.revision}, ${stateWords(rollout.state)}`;
    const going = !ENDED.has(rollout.state);
    panel.dataset.state = rollout.state;
    // replaceChildren writes a null as the text "null": the parts that
    // may be absent are left out instead.
    const parts = [
      h(`h${level}`, { id: "s-rollout" }, own ? h("span", { text: title }) : h("a", { href: rolloutHash(project.id, rollout.number), text: title })),
      h("p", { class: "rollout-standing", role: going ? "timer" : null, text: going ? standing(rollout) : outcome(rollout) }),
      going ? h("p", { class: "rollout-health", text: healthLine(rollout) }) : null,
      whyRolledBack(rollout),
      status,
      controls(project, rollout, status, refresh, signal),
      settingsList([
        ["Revision", h("a", { href: revisionHash(project.id, rollout.revision), text: `Revision ${rollout.revision}` })],
        ["Replacing", h("a", { href: revisionHash(project.id, rollout.previous_revision), text: `Revision ${rollout.previous_revision}` })],
        ["Stages", rollout.plan.stages.map(reach).join(", ")],
        ["Bake", span(rollout.plan.bake_seconds)],
        ["Healthy edges needed", `${rollout.plan.min_healthy_percent}%`],
        ["Failures tolerated", String(rollout.plan.max_failures)],
        ["Started", when(rollout.created_at)],
        ["Ended", rollout.ended_at ? when(rollout.ended_at) : "not yet"],
      ]),
      h("ol", { class: "stages", "aria-label": "Stages" }, rollout.stages.map((stage) => stageItem(rollout, stage, level + 1))),
    ];
    panel.replaceChildren(...parts.filter((part) => part !== null));
  };
  // The countdown alone, between two reads.
  const tick = () => {
    const standingLine = panel.querySelector(".rollout-standing");
    if (standingLine && !ENDED.has(rollout.state)) standingLine.textContent = standing(rollout);
  };
  async function refresh() {
    stop();
    try {
      const { body } = await api("GET", rolloutPath(project.id, rollout.number), { signal });
      rollout = body;
      draw();
    } catch (error) {
      if (error.name === "AbortError" || endSessionOn(error)) return;
      status.replaceChildren(errorBox(explain(error, "read rollouts", project.organization_id)));
    }
    schedule();
  }
  function schedule() {
    // One chain of timers, however many reads end at once.
    stop();
    if (signal.aborted || ENDED.has(rollout.state)) return;
    let left = REREAD_MS;
    const step = () => {
      left -= 1000;
      if (left <= 0) refresh();
      else {
        tick();
        timer = setTimeout(step, 1000);
      }
    };
    timer = setTimeout(step, 1000);
  }
  draw();
  schedule();
  return panel;
}

/** A project's rollouts: the current or last one in full, then the past
 * ones, on the project's page (`section`, its heading kept). */
async function showRollouts(project, section, signal) {
  const heading = section.querySelector("h2");
  let rollouts;
  let newest = null;
  try {
    const { body } = await api("GET", `${projectPath(project.id)}/rollouts?${query({ limit: 20 })}`, { signal });
    rollouts = body.data;
    // The listing's items leave the edges out: the newest is read whole.
    if (rollouts.length) newest = (await api("GET", rolloutPath(project.id, rollouts[0].number), { signal })).body;
  } catch (error) {
    if (error.name === "AbortError" || endSessionOn(error)) return;
    section.replaceChildren(heading, errorBox(explain(error, "see rollouts", project.organization_id)));
    return;
  }
  if (!rollouts.length) {
    section.replaceChildren(heading, h("p", { class: "empty", text: "No rollout yet. A revision's page offers “Roll out…”: a few edges first, the rest once they report healthy." }));
    return;
  }
  const past = rollouts.slice(1);
  section.replaceChildren(heading, rolloutPanel(project, newest, signal), ...(past.length ? [pastRollouts(project, past)] : []));
}

/** The rollouts before, newest first: each links to its page. */
const pastRollouts = (project, rollouts) =>
  h(
    "div",
    { class: "past-rollouts" },
    h("h3", { text: "Earlier rollouts" }),
    h(
      "ul",
      { class: "plain" },
      rollouts.map((rollout) =>
        h(
          "li",
          { "data-rollout": rollout.number },
          h("a", { href: rolloutHash(project.id, rollout.number), text: `Rollout ${rollout.number}` }),
          `: revision ${rollout.revision} over ${rollout.previous_revision}, ${stateWords(rollout.state)}${rollout.reason ? ` (${rollout.reason})` : ""}, `,
          when(rollout.created_at),
        ),
      ),
    ),
  );

/** A rollout's own page. */
async function viewRollout([id, number], _, signal) {
  const n = Number(number);
  loading(`rollout ${n}`);
  const [{ body: project }, { body: rollout }] = await Promise.all([
    api("GET", projectPath(id), { signal }),
    api("GET", rolloutPath(id, n), { signal }),
    loadOrganizations(signal),
  ]);
  show(projectCrumbs(project, `Rollout ${n}`), h("h1", { text: `${project.slug}: rollout ${n}` }), rolloutPanel(project, rollout, signal, { own: true }));
}

/** "1, 10%, 50%, 100%" as the plan's stages; null when a part is neither
 * a number of edges nor a share of them (the API judges the numbers). */
function parseStages(text) {
  const parts = text.split(",").map((part) => part.trim()).filter(Boolean);
  const stages = parts.map((part) => {
    const match = /^(\d+)\s*(%?)$/.exec(part);
    if (!match) return null;
    return match[2] ? { percent: Number(match[1]) } : { edges: Number(match[1]) };
  });
  return stages.length && stages.every(Boolean) ? stages : null;
}

/** "Roll out…" on a revision's page: opens, in place, the plan's form;
 * it starts the rollout and opens its page. Those who may not activate
 * never see it. */
function rollOutControl(project, revision, signal) {
  const area = h("div", { class: "roll-out" });
  const open = h("button", {
    type: "button",
    class: "roll-out-open",
    text: "Roll out…",
    "aria-expanded": "false",
    onclick: () => {
      open.setAttribute("aria-expanded", "true");
      open.hidden = true;
      area.append(rollOutForm(project, revision, signal, () => {
        area.replaceChildren(open);
        open.hidden = false;
        open.setAttribute("aria-expanded", "false");
        open.focus();
      }));
      area.querySelector("input")?.focus();
    },
  });
  area.append(open);
  return area;
}

function rollOutForm(project, revision, signal, close) {
  const inputs = {
    stages: h("input", { id: "rollout-stages", name: "stages", value: "1, 10%, 50%, 100%", autocomplete: "off" }),
    bake: h("input", { id: "rollout-bake", name: "bake_seconds", type: "number", min: "0", value: "60", inputmode: "numeric" }),
    minHealthy: h("input", { id: "rollout-min-healthy", name: "min_healthy_percent", type: "number", min: "0", max: "100", value: "100", inputmode: "numeric" }),
    maxFailures: h("input", { id: "rollout-max-failures", name: "max_failures", type: "number", min: "0", value: "0", inputmode: "numeric" }),
  };
  const said = h("div", { class: "roll-out-status" });
  const form = h(
    "form",
    { class: "card roll-out-form", "aria-label": `Roll out revision ${revision.revision}` },
    h("h2", { text: `Roll out revision ${revision.revision}` }),
    h("p", { class: "muted", text: "Stages are cumulative: a number is that many edges, N% that share of them. Each stage bakes, then goes on once enough of its edges report healthy; a failure puts every edge back on the active revision." }),
    h(
      "div",
      { class: "roll-out-fields" },
      field("Stages", inputs.stages, "stages"),
      field("Bake (seconds)", inputs.bake, "bake_seconds"),
      field("Healthy edges needed (%)", inputs.minHealthy, "min_healthy_percent"),
      field("Failures tolerated", inputs.maxFailures, "max_failures"),
    ),
    said,
    h("div", { class: "toolbar" }, h("button", { type: "submit", class: "primary", text: `Start the rollout of revision ${revision.revision}` }), h("button", { type: "button", text: "Cancel", onclick: close })),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    startRollout(project, revision, form, inputs, said, signal);
  });
  return form;
}

async function startRollout(project, revision, form, inputs, said, signal) {
  clearFieldErrors(inputs);
  const stages = parseStages(inputs.stages.value);
  if (!stages) {
    inputs.stages.setAttribute("aria-invalid", "true");
    fieldErrors.get(inputs.stages).textContent = "Write numbers of edges or shares of them, comma-separated, such as 1, 10%, 50%, 100%.";
    said.replaceChildren();
    return;
  }
  const body = {
    revision: revision.revision,
    stages,
    bake_seconds: Number(inputs.bake.value),
    min_healthy_percent: Number(inputs.minHealthy.value),
    max_failures: Number(inputs.maxFailures.value),
  };
  said.replaceChildren(h("p", { class: "loading", role: "status", text: `Starting the rollout of revision ${revision.revision}…` }));
  try {
    const { body: rollout } = await api("POST", `${projectPath(project.id)}/rollouts`, {
      body,
      signal,
      headers: { "Idempotency-Key": idempotencyKeyFor(form, body) },
    });
    notify(`Rollout ${rollout.number} of revision ${revision.revision} started: stage 1 of ${rollout.plan.stages.length}.`);
    go(rolloutHash(project.id, rollout.number));
  } catch (error) {
    if (error.name === "AbortError" || endSessionOn(error)) return;
    if (error.body?.error?.code === "rollout_in_progress") {
      said.replaceChildren(await inProgress(project, error, signal));
      return;
    }
    const byName = { stages: inputs.stages, bake_seconds: inputs.bake, min_healthy_percent: inputs.minHealthy, max_failures: inputs.maxFailures };
    for (const param of error.body?.error?.params || []) {
      const input = byName[param.param.split(/[.[]/)[0]];
      if (!input) continue;
      input.setAttribute("aria-invalid", "true");
      fieldErrors.get(input).textContent = `${param.param}: ${param.message}`;
    }
    said.replaceChildren(errorBox(explain(error, "roll out revisions", project.organization_id)));
  }
}

/** The refusal of a second rollout, with a link to the one going on. */
async function inProgress(project, error, signal) {
  let number = error.body?.error?.rollout ?? null;
  if (number === null) {
    try {
      const { body } = await api("GET", `${projectPath(project.id)}/rollouts?${query({ limit: 1 })}`, { signal });
      number = body.data[0]?.number ?? null;
    } catch {
      number = null;
    }
  }
  return h(
    "div",
    { class: "error", role: "alert" },
    h("strong", { text: "Not started. " }),
    `${error.body.error.message} `,
    number !== null ? h("a", { href: rolloutHash(project.id, number), class: "running-rollout", text: `See rollout ${number}` }) : null,
    number !== null ? ": end it (abort, or promote it to its end) before another." : null,
  );
}

export { rollOutControl, rolloutHash, showRollouts, viewRollout };
