// Comparing two revisions of proxy settings: the rule only (no DOM, no
// API), so that the cases both clients run reach it alone.

// One rule, the terminal's too (`proxydeck proxy-settings diff`), written
// in docs/management.md ("Comparing revisions"); both run the cases of
// tests/integration/fixtures/revision-diff-cases.json. Backends are paired
// by name, routes by what they match (path, and whether it is a regex):
// the k-th item of A with a key and the k-th item of B with the same key
// are a pair. A lone item of A is removed, of B added; a pair is changed
// when a member differs, member by member, else unchanged.

/** Whether two JSON values are the same (objects whatever their members'
 * order). */
function sameValue(x, y) {
  if (x === y) return true;
  if (typeof x !== "object" || typeof y !== "object" || x === null || y === null) return false;
  if (Array.isArray(x) !== Array.isArray(y)) return false;
  const names = Object.keys(x);
  return names.length === Object.keys(y).length && names.every((name) => Object.hasOwn(y, name) && sameValue(x[name], y[name]));
}

const backendKey = (backend) => JSON.stringify(backend.name ?? null);

const routeKey = (route) => JSON.stringify([route.path ?? null, route.regex === true]);

/** The items of `from` and `to` paired by `keyOf`: `from`'s items in
 * order (with their partners, if any), then `to`'s items left alone in
 * order. Positions count from 1. */
function pairUp(from, to, keyOf) {
  const waiting = new Map();
  to.forEach((item, index) => {
    const key = keyOf(item);
    if (!waiting.has(key)) waiting.set(key, []);
    waiting.get(key).push(index);
  });
  const taken = new Set();
  const pairs = from.map((item, index) => {
    const partner = waiting.get(keyOf(item))?.shift();
    if (partner === undefined) return { a: item, fromPosition: index + 1 };
    taken.add(partner);
    return { a: item, b: to[partner], fromPosition: index + 1, toPosition: partner + 1 };
  });
  to.forEach((item, index) => {
    if (!taken.has(index)) pairs.push({ b: item, toPosition: index + 1 });
  });
  return pairs;
}

/** The members that differ between `from` and `to`, in name order: each
 * with its value in A (`from`) and in B (`to`), absent on a side that
 * does not have it. */
function memberChanges(from, to) {
  const names = [...new Set([...Object.keys(from), ...Object.keys(to)])].sort();
  return names
    .filter((name) => !sameValue(from[name], to[name]))
    .map((name) => {
      const change = { member: name };
      if (from[name] !== undefined) change.from = from[name];
      if (to[name] !== undefined) change.to = to[name];
      return change;
    });
}

/** The ranks whose paired routes (the same rank in A and B) B lists in
 * another order than A, in the order each rank first comes in A: the edges
 * evaluate routes of one rank in the order of the list, so such a reorder
 * is a change although no route changed. Each: the rank, its routes' paths
 * in A's order and in B's. */
function reorderedRanks(pairs) {
  const ranks = new Map();
  for (const pair of pairs) {
    if (!pair.a || !pair.b || !sameValue(pair.a.rank, pair.b.rank)) continue;
    const key = JSON.stringify(pair.a.rank ?? null);
    if (!ranks.has(key)) ranks.set(key, []);
    ranks.get(key).push(pair);
  }
  const path = (route) => (typeof route.path === "string" ? route.path : "");
  return [...ranks.values()]
    .filter((group) => group.some((pair, i) => i > 0 && group[i - 1].toPosition > pair.toPosition))
    .map((group) => ({
      rank: group[0].a.rank,
      from: group.map((pair) => path(pair.a)),
      to: [...group].sort((x, y) => x.toPosition - y.toPosition).map((pair) => path(pair.b)),
    }));
}

const verdictOf = (pair) => (!pair.a ? "added" : !pair.b ? "removed" : memberChanges(pair.a, pair.b).length ? "changed" : "unchanged");

/** What changed from revision `a` to `b`, shaped as the terminal's
 * `proxydeck proxy-settings diff --json` says it (its backends, routes and
 * unchanged counts). */
function revisionDiff(a, b) {
  const diff = { backends: [], routes: [], reordered: reorderedRanks(pairUp(a.routes || [], b.routes || [], routeKey)), unchanged: { backends: 0, routes: 0 } };
  for (const pair of pairUp(a.backends || [], b.backends || [], backendKey)) {
    const item = pair.a || pair.b;
    const name = typeof item.name === "string" ? item.name : JSON.stringify(item.name ?? null);
    const verdict = verdictOf(pair);
    if (verdict === "unchanged") diff.unchanged.backends += 1;
    else if (verdict === "added") diff.backends.push({ change: verdict, name, to: pair.b });
    else if (verdict === "removed") diff.backends.push({ change: verdict, name, from: pair.a });
    else diff.backends.push({ change: verdict, name, members: memberChanges(pair.a, pair.b) });
  }
  for (const pair of pairUp(a.routes || [], b.routes || [], routeKey)) {
    const verdict = verdictOf(pair);
    if (verdict === "unchanged") diff.unchanged.routes += 1;
    else if (verdict === "added") diff.routes.push({ change: verdict, to_position: pair.toPosition, to: pair.b });
    else if (verdict === "removed") diff.routes.push({ change: verdict, from_position: pair.fromPosition, from: pair.a });
    else
      diff.routes.push({
        change: verdict,
        from_position: pair.fromPosition,
        to_position: pair.toPosition,
        to: pair.b,
        members: memberChanges(pair.a, pair.b),
      });
  }
  return diff;
}

export { backendKey, pairUp, reorderedRanks, revisionDiff, routeKey, sameValue, verdictOf };
