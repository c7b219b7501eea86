-- components/02_structured_schema.lua: schemas built from argument blocks.
local support = require "spec.support"

describe("02_structured_schema", function()
  local server
  before_each(function() server = support.components_server() end)
  after_each(function() server:close() end)

  local function tool(name, opts)
    for _, t in ipairs(server:list_tools(opts)) do
      if t.name == name then return t end
    end
  end

  it("builds the search schema from its arguments", function()
    local search = tool("search")
    assert.same({
      type = "object",
      properties = {
        query = { type = "string", minLength = 1 },
        page = { type = "integer", minimum = 1 },
        tags = { type = "array", items = { type = "string" }, uniqueItems = true },
      },
      required = { "query" },
      additionalProperties = false,
    }, search.inputSchema)
    assert.same("Search packages", search.title)
    assert.same({ ["com.example/search"] = { category = "catalog" } }, search._meta)
  end)

  it("shows icons from 2025-11-25 on, not to 2025-06-18 clients", function()
    assert.same({ { src = "https://example.com/search.png", mimeType = "image/png" } },
                tool("search").icons)
    local old = require("snodo.testing").load(support.components)
    local t
    for _, x in ipairs(old:list_tools { protocol = "2025-06-18" }) do
      if x.name == "search" then t = x end
    end
    assert.is_nil(t.icons)
    assert.same("Search packages", t.title)
    old:close()
  end)

  it("nests the order blocks with their own required lists", function()
    local order = tool("order")
    assert.same({ "customer", "lines" }, order.inputSchema.required)
    assert.same({ "id" }, order.inputSchema.properties.customer.required)
    local lines = order.inputSchema.properties.lines
    assert.same(1, lines.minItems)
    assert.same({ "sku", "quantity" }, lines.items.required)
    assert.is_false(lines.items.additionalProperties)
    assert.same({ type = "integer", minimum = 1 }, lines.items.properties.quantity)
    assert.same({ "order_id", "total" }, order.outputSchema.required)
  end)

  it("searches with the default page", function()
    local result = server:call_tool("search", { query = "json" })
    assert.same("searching for json on page 1", result.content[1].text)
  end)

  it("places an order and returns structured content", function()
    local result = server:call_tool("order", {
      customer = { id = "c-1" }, lines = { { sku = "s-1", quantity = 2 } },
    }, support.MODERN)
    assert.same({ order_id = "o-1", total = 12.5 }, result.structuredContent)
    assert.same('{"order_id":"o-1","total":12.5}', result.content[1].text)
  end)
end)
