# One HAProxy for every project `proxydeck follow` keeps (docs/edge.md):
# its configuration and the two maps of routes, from each project's active
# revision (PROJECT/proxy-settings.json), with the routing index follow
# writes (routing.map, routing-wildcards.map) choosing the project by host.
#
#   cd "$PROXYDECK_FOLLOW_DIR" && jq -n --arg listen "127.0.0.1:8081" \
#       --arg run /path/to/run --slurpfile previous pieces.json \
#       -f haproxy.jq */proxy-settings.json
#
# answers {"config", "routes", "defaults", "pieces", "errors"}, the first
# three as arrays of lines (`jq -r '.config[]'`: jq joins long strings in
# quadratic time):
#
# - one frontend per address of $listen (separated by spaces): the
#   request's host (the Host header, port stripped, lower case) looked up
#   in routing.map, then with its first label removed in
#   routing-wildcards.map (an exact name wins; a wildcard matches one
#   label); a host neither holds gets 404.html, never a project's backend;
# - each project's backends, named PROJECT.NAME (a project id has no `.`:
#   two projects' `origin` are two backends);
# - the project's routes choose among them: prefix routes through the
#   routes map, keyed PROJECT + path and looked up with `map_beg`, the
#   longest prefix (a route that an earlier route's prefix covers can never
#   be chosen, and is left out: what remains, the longest is the first in
#   rank order); a project with a regex route has all its routes as rules
#   instead, in rank order; then its default backend (the defaults map);
#   a project with none gets 503.
#
# A revision with a value unsafe in the configuration (a space, a quote,
# `#`, `\`, a control character: C0, DEL, C1) is not rendered: the
# project keeps what $previous holds for it (the pieces of the last
# configuration that was put in place), and its error is in "errors".

def safe:
  if type == "string" and test("^[^\\s\"'#\\\\\\p{Cc}]+$") then .
  else error("a value unsafe for HAProxy's configuration: \(tojson)") end;

# A project id as follow names its folders: 1 to 64 of A-Z a-z 0-9 _ -.
def project_id: if test("^[A-Za-z0-9_-]{1,64}$") then . else error("not a project id: \(tojson)") end;

def backend_id($project): $project + "." + (.name | gsub("[^A-Za-z0-9_.-]"; "_"));

# TLS to the backend: `enable_ssl`, or any of the members that turn it on
# as a side effect (check_certificate, ca_certificate, sni_hostname), as
# the platform's own proxy does; an empty one is unset
# (docs/management.md, "Checks before activation").
def tls:
  .enable_ssl == true
  or ([.check_certificate, .ca_certificate, .sni_hostname] | any(. != null and . != ""));

# The backend's address with its port: as given when it has one, else 443
# with TLS and 80 without (HAProxy would otherwise use the port the client
# came to). A host is a DNS name, an IPv4 address, or an IPv6 address in
# brackets, which HAProxy reads as is: [2001:db8::1]:443.
def address_with_port:
  (if tls then "443" else "80" end) as $port
  | .address as $address
  | if ($address | test("^\\[.*\\]$")) or ($address | test(":") | not)
    then $address + ":" + $port
    else $address end;

def server_line:
  "    server origin " + (address_with_port | safe)
  + (if tls then
       " ssl verify none" + (if (.sni_hostname // "") != "" then " sni str(" + (.sni_hostname | safe) + ")" else "" end)
     else "" end);

# The routes by rank, lowest first, routes of the same rank in the order
# of the list (the sort is stable by its key).
def ranked: (.routes // []) | to_entries | sort_by([(.value.rank | tonumber), .key]) | map(.value);

# The prefix routes that can be chosen: those whose path begins with `/`
# (a request's path always does) and that no earlier route's prefix
# covers.
def reachable:
  reduce .[] as $route ([];
    if ($route.path | startswith("/") | not) or any(.[]; . as $kept | $route.path | startswith($kept.path))
    then . else . + [$route] end);

# What one revision of $project renders to.
def pieces($project):
  ($project | project_id) as $project
  | (.revision | tostring | safe) as $number
  | (.backends // []) as $backends
  | ([$backends[] | select(.default)] + $backends)[0] as $default
  | ranked as $routes
  | {
      revision: .revision,
      backends: [ $backends[]
        | "", "backend " + backend_id($project),
          "    http-response set-header X-Proxy-Settings-Revision \($number)",
          server_line ],
      default: (if $default then ($default | backend_id($project)) else null end)
    }
  | if any($routes[]; .regex) then
      .rules = [ $routes[]
        | "    use_backend " + ({name: .backend_name} | backend_id($project))
          + " if { var(txn.project) -m str \($project) } { " + (if .regex then "path_reg " else "path_beg " end)
          + (.path | safe) + " }" ]
      | .routes = []
    else
      .rules = []
      | .routes = [ $routes | reachable | .[]
        | "\($project)\(.path | safe) " + ({name: .backend_name} | backend_id($project)) ]
    end;

($previous[0] // {}) as $previous
# Each revision rendered, then gathered: jq 1.6 copies an object that a
# reduce adds keys to, which took seconds for 10,000 projects.
| [ inputs as $revision
    | (input_filename | split("/")[0]) as $project
    | $revision
    | try {project: $project, ok: pieces($project)}
      catch {project: $project, revision: $revision.revision, error: .} ] as $rendered
| {
    pieces: ($rendered
      | map(if has("ok") then {key: .project, value: .ok}
            elif $previous[.project] then {key: .project, value: $previous[.project]}
            else empty end)
      | from_entries),
    errors: [ $rendered[] | select(has("error"))
      | "project \(.project): revision \(.revision) not applied: \(.error)"
        + (if $previous[.project] then "; it keeps revision \($previous[.project].revision)" else "" end) ]
  }
| .pieces as $pieces
| ($run | safe) as $run
| .config = ([
    "# Written by deploy/edge/haproxy-apply from \($pieces | length) projects: do not edit.",
    "global",
    "    maxconn 4096",
    "    # Reloads take the listening sockets from the running process",
    "    # (haproxy -x): no connection is refused while it reloads.",
    "    stats socket \($run)/admin.sock mode 600 level admin expose-fd listeners",
    "    # An old process finishes its connections for 30 s at most.",
    "    hard-stop-after 30s",
    "",
    "defaults",
    "    mode http",
    "    # On a reload the old process answers a kept connection's next",
    "    # request with `Connection: close` rather than close it idle, where",
    "    # a client sending at that moment would get an error.",
    "    option idle-close-on-response",
    "    timeout connect 2s",
    "    timeout client 30s",
    "    timeout server 30s",
    "    # A backend whose name does not resolve yet starts down, not fatal.",
    "    default-server init-addr last,libc,none",
    "",
    ( $listen | split(" ") | map(select(. != "")) | to_entries[]
      | "frontend edge_\(.key)",
        "    bind \(.value | safe)",
        "    # The host: the Host header, its port stripped, in lower case.",
        "    http-request set-var(txn.host) req.hdr(host),lower,regsub(:[0-9]+$,)",
        "    http-request set-var(txn.project) var(txn.host),map(\($run)/routing.map)",
        "    http-request set-var(txn.project) var(txn.host),regsub(^[^.]+[.],),map(\($run)/routing-wildcards.map) if !{ var(txn.project) -m found }",
        "    http-request return status 404 content-type \"text/html; charset=utf-8\" file \($run)/404.html if !{ var(txn.project) -m found }",
        "    http-request set-var(txn.path) path",
        "    http-request set-var(txn.route) var(txn.project),concat(,txn.path,),map_beg(\($run)/routes.map)",
        "    http-request set-var(txn.default) var(txn.project),map(\($run)/defaults.map)",
        ( $pieces[] | .rules[] ),
        "    use_backend %[var(txn.route)] if { var(txn.route) -m found }",
        "    use_backend %[var(txn.default)] if { var(txn.default) -m found }",
        "    default_backend unrouted",
        "" ),
    "# A project without an active revision, or without a route for this path.",
    "backend unrouted",
    "    http-request return status 503 content-type \"text/plain; charset=utf-8\" string \"This site has no route for this request.\"",
    ( $pieces | to_entries[] | "", "# project \(.key), revision \(.value.revision)", .value.backends[] )
  ])
| .routes = [$pieces[] | .routes[]]
| .defaults = [$pieces | to_entries[] | select(.value.default) | "\(.key) \(.value.default)"]
