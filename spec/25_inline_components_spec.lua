-- components/25_inline_components.lua and the inline tool of server.lua.
local support = require "spec.support"

describe("25_inline_components", function()
  local server
  before_each(function() server = support.components_server() end)
  after_each(function() server:close() end)

  it("greets through a helper declared beside the tool", function()
    assert.same("Hello, Ada!", server:call_tool("greet", { name = "Ada" }).content[1].text)
  end)

  it("names a tool without a name after its file", function()
    local result = server:call_tool("25_inline_components")
    assert.same({ groups = { "web", "data" } }, result.structuredContent)
  end)

  it("serves the inline tool declared in server.lua", function()
    assert.same("echo: hi", server:call_tool("echo", { text = "hi" }).content[1].text)
  end)
end)
