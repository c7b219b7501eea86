-- components/server.lua: identity, instructions and both eras' handshakes.
local support = require "spec.support"

describe("server.lua", function()
  local server
  before_each(function() server = support.components_server() end)
  after_each(function() server:close() end)

  it("answers initialize with its identity and instructions", function()
    local r = server:initialize("2025-11-25")
    assert.same("2025-11-25", r.result.protocolVersion)
    assert.same({ name = "snodo-examples", version = "0.1.0", title = "Snodo examples" },
                r.result.serverInfo)
    assert.same("Example tools, resources and prompts bundled with Snodo.", r.result.instructions)
  end)

  it("answers server/discover with the cache hint of tools_cache", function()
    local r = server:request("server/discover", {}, support.MODERN)
    assert.same({ "2026-07-28", "2025-11-25", "2025-06-18" }, r.result.supportedVersions)
    assert.same(60000, r.result.ttlMs)
    assert.same("public", r.result.cacheScope)
    assert.same("snodo-examples", r.result._meta["io.modelcontextprotocol/serverInfo"].name)
  end)

  it("lists tools in a deterministic order", function()
    local names = {}
    for i, t in ipairs(server:list_tools(support.MODERN)) do names[i] = t.name end
    assert.same({ "25_inline_components", "echo", "greet", "long_job", "lookup", "order",
                  "search", "send_message", "touch_readme", "version" }, names)
  end)
end)
