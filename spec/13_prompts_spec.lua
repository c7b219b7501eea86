-- components/13_prompts.lua: rendering and argument checks.
local support = require "spec.support"

describe("13_prompts", function()
  local server
  before_each(function() server = support.components_server() end)
  after_each(function() server:close() end)

  it("renders a string as one user message", function()
    local r = server:get_prompt("review", { name = "plug", focus = "security" })
    assert.same({ { role = "user", content = { type = "text",
                    text = "Review plug, focusing on security." } } }, r.messages)
    assert.same("Review a package", r.description)
  end)

  it("renders a message list with a description and metadata", function()
    local r = server:get_prompt("pair", { topic = "caching" }, support.MODERN)
    assert.same("Pairing on caching", r.description)
    assert.same(3, #r.messages)
    assert.same("assistant", r.messages[2].role)
    assert.same({ type = "resource_link", uri = "hex://snodo/readme", name = "readme" },
                r.messages[3].content)
    assert.same("pairing", r._meta["com.example/kind"])
  end)

  it("checks required arguments before render", function()
    local _, err = server:get_prompt("review", {})
    assert.same({ code = -32602, message = "Invalid params: missing required arguments: name" },
                err)
  end)

  it("lists prompts with their arguments", function()
    local items = server:list_all("prompts/list", "prompts")
    assert.same({ name = "review", description = "Review a package", arguments = {
      { name = "name", description = "Package name", required = true },
      { name = "focus", description = "quality, security, or upgrade" },
    } }, items[3])
  end)
end)
