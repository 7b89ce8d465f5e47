"""Schemathesis hooks for proxydeck's CI run (.ci/schemathesis.toml loads this file)."""

import os
import re

import schemathesis

# The id of the token the run authenticates with (.ci/schemathesis sets it).
OWN_TOKEN_ID = os.environ.get("PROXYDECK_SCHEMATHESIS_TOKEN_ID")
# An id no token has: what deleting the run's own token deletes instead.
NO_TOKEN_ID = "00000000-0000-7000-8000-00000000dead"

# Rules of the contract that no JSON schema can state, by the parameter a
# 400 names. A schema-valid request broken only by these is rightly refused:
#   start_key  - a key that never named an item of the list (docs/decisions.md
#                section 2); a random one never does. Real keys are still
#                tested: the stateful phase feeds `last_key` back.
#   id         - updateProject's `id` must be the path's (docs/management.md,
#                "Bodies"); a random one never is.
#   trusted_ips, blocked_ips - an IP address or a CIDR block, v4 or v6: no
#                format or pattern says "either, with a prefix length that
#                fits the address".
#   external_project_url - an absolute URL or empty (its scheme, http or
#                https, is the document's `pattern`; that it parses as a URL
#                is not).
#   expires_at - createApiToken's must be in the future.
#   backends[i].name, backends[i].default, routes[i].backend_name - a
#                revision's backend names are unique, one backend at most is
#                the default, and each route names one of the backends.
#   routes[i].path, proxy_only_path_regex, override_cache[i].path,
#   rate_limiting[i].conditions.path - a regex member compiles (the
#                checks before activation, docs/management.md); a random
#                string seldom does.
#   backends[i].address, backends[i].ca_certificate - a valid host with an
#                optional port up to 65535; PEM certificates (or "").
#   Idempotency-Key - not taken with dry_run=true (a dry run keeps nothing
#                to replay), nor holding an API token's prefix.
#   error      - reportEdge's `error` goes with status `failed` only (the
#                document says so; a schema would need if/then, which
#                generated clients read badly), or with `healthy: false`.
#   healthy    - reportEdge's `healthy` goes with status `applied` only
#                (docs/rollouts.md; if/then again).
#   revision   - reportEdge's `revision` is one the project has (issue 44,
#                docs/feed.md); a random number seldom is.
#   email      - an invitation's address as RFC 5322 has it without a display
#                name (the email_address crate, docs/teams.md); the document's
#                `format: email` is the nearest a schema says, and its
#                generators' edge cases differ.
#   avatar_url - updateUser's is an https URL that parses (the document's
#                `pattern` says https; that it parses is not).
# And on the custom domains' operations (a path with /domains), by the
# parameter a 400 names:
#   name       - a host name in IDNA's sense (UTS 46 mapping, letters,
#                digits and hyphens, label and length limits, no IP address
#                or port, at most one leading wildcard label: docs/domains.md),
#                which no pattern can state without refusing the Unicode
#                names the document takes; and a project's bounded number
#                of names.
#   dns_status - `false` asks for nothing; ssl_status - `true` only on a
#                name that routes.
# Rules a schema can state are stated in the document instead (slugs,
# header and cookie names, header values, country, continent and region
# codes), so that fuzzers and generated clients know them.
BEYOND_THE_SCHEMA = re.compile(
    r"start_key|id|(trusted_ips|blocked_ips)\[\d+\]|external_project_url|expires_at"
    r"|backends\[\d+\]\.(name|default|address|ca_certificate)"
    r"|routes\[\d+\]\.(backend_name|path)"
    r"|proxy_only_path_regex|override_cache\[\d+\]\.path|rate_limiting\[\d+\]\.conditions\.path"
    r"|Idempotency-Key"
    r"|error|healthy|revision|email|avatar_url"
)
DOMAIN_RULES = re.compile(r"name|dns_status|ssl_status")


# A `wait` listChanges takes: digits without leading zeros, then `s`, `ms`
# or nothing (seconds).
VALID_WAIT = re.compile(r"(0|[1-9][0-9]{0,5})(s|ms)?")


@schemathesis.hook
def filter_failure(ctx, failure, case, response):
    """Drops one kind of failure only: a 400 to a schema-valid request that
    names nothing but parameters of BEYOND_THE_SCHEMA. Every other rejected
    schema-valid request stays a failure."""
    if failure.code != "ST202" or response.status_code != 400:
        return True
    try:
        params = [param.get("param") for param in response.json()["error"]["params"]]
    except (ValueError, KeyError, TypeError, AttributeError):
        return True
    on_domains = "/domains" in case.path
    return not params or not all(
        isinstance(param, str)
        and (
            BEYOND_THE_SCHEMA.fullmatch(param)
            or (on_domains and DOMAIN_RULES.fullmatch(param))
        )
        for param in params
    )


@schemathesis.hook
def before_call(ctx, case, kwargs):
    """Keeps the run's own token alive: deleteApiToken works (the stateful
    phase deletes the tokens it creates), but a delete of the token the
    run authenticates with would leave every later request a 401, so it
    goes to an id no token has (a 404, as the contract says)."""
    if (
        OWN_TOKEN_ID
        and case.method.upper() == "DELETE"
        and case.path == "/v1/api_tokens/{id}"
        and (case.path_parameters or {}).get("id") == OWN_TOKEN_ID
    ):
        case.path_parameters["id"] = NO_TOKEN_ID
    # listChanges waits up to `wait` (60 s at most) for a change that the
    # run may never make: a valid wait is cut to 50 ms so that the run stays
    # short. Invalid ones are sent as generated, for their 400.
    if case.path == "/v1/changes" and isinstance(case.query, dict):
        wait = case.query.get("wait")
        if isinstance(wait, str) and VALID_WAIT.fullmatch(wait):
            amount = int(re.sub(r"\D", "", wait))
            millis = amount if wait.endswith("ms") else amount * 1000
            if millis <= 60_000:
                case.query["wait"] = "50ms"
