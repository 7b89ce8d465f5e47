# HAProxy's configuration for one proxy settings revision, as `proxydeck
# follow` writes it (PROJECT/proxy-settings.json): a frontend on $listen,
# one HAProxy backend per backend of the revision, each route an ACL on the
# path (a prefix, or a regex when `regex` is true) sending to its backend,
# routes in rank order (lowest first; routes of the same rank in the order
# of the list), then the default backend.
#
# jq -r --arg listen 127.0.0.1:8081 -f haproxy.jq proxy-settings.json
#
# Every value placed in the configuration must be free of spaces, quotes,
# `#`, `\` and control characters (C0, DEL, C1): one that is not stops the
# rendering (an error), so that a revision can never write a directive of
# its own.

def safe:
  if type == "string" and test("^[^\\s\"'#\\\\\\p{Cc}]+$") then .
  else error("a value unsafe for HAProxy's configuration: \(tojson)") end;

def backend_id: "be_" + (.name | gsub("[^A-Za-z0-9_.-]"; "_"));

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

(.backends // []) as $backends
| ([$backends[] | select(.default)] + $backends)[0] as $default
| [
    "# Written from revision \(.revision) by deploy/edge/haproxy-apply: do not edit.",
    "global",
    "    maxconn 4096",
    "",
    "defaults",
    "    mode http",
    "    timeout connect 2s",
    "    timeout client 30s",
    "    timeout server 30s",
    "    # A backend whose name does not resolve yet starts down, not fatal.",
    "    default-server init-addr last,libc,none",
    "",
    "frontend edge",
    "    bind \($listen | safe)",
    "    http-response set-header X-Proxy-Settings-Revision \(.revision)",
    # By rank, then by place in the list: the sort is stable by its key.
    ( (.routes // []) | to_entries | sort_by([(.value.rank | tonumber), .key]) | map(.value)
      | to_entries[]
      | .key as $i | .value
      | "    acl route_\($i) " + (if .regex then "path_reg " else "path_beg " end) + (.path | safe),
        "    use_backend " + ({name: .backend_name} | backend_id) + " if route_\($i)" ),
    (if $default then "    default_backend " + ($default | backend_id) else empty end),
    ( $backends[] | "", "backend " + backend_id, server_line )
  ]
| join("\n")
