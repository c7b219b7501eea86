-- components/15_pagination.lua: resources/list across pages.
local support = require "spec.support"

describe("15_pagination", function()
  local server
  before_each(function() server = support.components_server() end)
  after_each(function() server:close() end)

  it("pages resources/list by the configured page size", function()
    local items, pages = server:list_all("resources/list", "resources", support.MODERN)
    assert.same(63, #items)
    assert.same(2, pages)
    local seen = {}
    for _, r in ipairs(items) do
      assert.is_nil(seen[r.uri])
      seen[r.uri] = true
    end
    assert.is_true(seen["pages://item/60"])
  end)

  it("refuses a cursor that was not issued for this catalog", function()
    local r = server:request("resources/list", { cursor = "c1.32.0123456789abcdef" })
    assert.same({ code = -32602, message = "Invalid params: invalid or expired cursor" }, r.error)
  end)

  it("reads a generated resource", function()
    assert.same("item 7 of 60", server:read_resource("pages://item/07").contents[1].text)
  end)
end)
