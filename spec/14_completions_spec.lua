-- components/14_completions.lua: completion on a prompt and a template.
local support = require "spec.support"

describe("14_completions", function()
  local server
  before_each(function() server = support.components_server() end)
  after_each(function() server:close() end)

  it("completes a prompt argument with total and has_more", function()
    assert.same({ values = { "phoenix", "phoenix_live_view" }, total = 2, hasMore = false },
                server:complete({ prompt = "lookup" }, "name", "ph"))
  end)

  it("completes a resource template argument from a plain list", function()
    assert.same({ values = { "jason" } },
                server:complete({ resource = "hex://{name}/docs{/page*}" }, "name", "j",
                                support.MODERN))
  end)

  it("advertises the completions capability", function()
    local r = server:initialize("2025-11-25")
    assert.same({}, r.result.capabilities.completions)
  end)

  it("reads the template it completes, with an absent {/page*} left out", function()
    local r = server:read_resource("hex://plug/docs")
    assert.same("docs of plug, page index", r.contents[1].text)
  end)
end)
