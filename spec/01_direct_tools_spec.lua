-- components/01_direct_tools.lua: raw tools with hand-written schemas.
local support = require "spec.support"

describe("01_direct_tools", function()
  local server
  before_each(function() server = support.components_server() end)
  after_each(function() server:close() end)

  it("lists the raw schemas as written", function()
    local tools = {}
    for _, t in ipairs(server:list_tools()) do tools[t.name] = t end
    assert.same({ type = "object", properties = { name = { type = "string" } },
                  required = { "name" } }, tools.version.inputSchema)
    assert.same({ type = "object", properties = { version = { type = "string" } } },
                tools.version.outputSchema)
    assert.same({ readOnlyHint = true, openWorldHint = false }, tools.version.annotations)
  end)

  it("returns a table as structured content with its JSON as text", function()
    local result = server:call_tool("version", { name = "jason" })
    assert.same({ version = "1.2.3" }, result.structuredContent)
    assert.same({ { type = "text", text = '{"version":"1.2.3"}' } }, result.content)
    assert.is_nil(result.isError)
  end)

  it("turns nil, message into a tool error the model can act on", function()
    local result = server:call_tool("lookup", { name = "nope" })
    assert.is_true(result.isError)
    assert.same("No package named nope", result.content[1].text)
  end)

  it("answers a found package as text in the 2026-07-28 era", function()
    local result = server:call_tool("lookup", { name = "plug" }, support.MODERN)
    assert.same("A web middleware library", result.content[1].text)
    assert.same("complete", result.resultType)
  end)

  it("checks the required list before the handler runs", function()
    local result = server:call_tool("version", {})
    assert.is_true(result.isError)
    assert.same("Missing required arguments: name", result.content[1].text)
  end)
end)
