-- The conformance fixture: what the official MCP conformance suite calls
-- (../../shared/conformance/FIXTURE.md, sections C.4 and C.5), written with
-- the DSL. Served by tests/conformance/run.sh as
--   snodo serve tests/conformance --http 127.0.0.1:<free port>
-- Scenarios that need host features still being built are listed in
-- expected-failures.txt, each with the issue that will make it pass.
local snodo = require "snodo"

snodo.server {
  name = "snodo-conformance",
  version = "0.1.0",
  instructions = "The fixture the MCP conformance suite drives.",
}
