-- components/12_resources.lua: direct resources, templates, blobs, files.
local support = require "spec.support"

describe("12_resources", function()
  local server
  before_each(function() server = support.components_server() end)
  after_each(function() server:close() end)

  it("binds template variables into params and returns a table as JSON", function()
    local r = server:read_resource("hex://jason/info")
    assert.same({ { uri = "hex://jason/info", mimeType = "application/json",
                    text = '{"name":"jason"}' } }, r.contents)
  end)

  it("returns snodo.blob as base64", function()
    local r = server:read_resource("hex://snodo/logo.png", support.MODERN)
    assert.same("iVBORw0KGgo=", r.contents[1].blob)
    assert.same(60000, r.ttlMs)
  end)

  it("serves a file under the docs folder", function()
    local r = server:read_resource("file:///docs/intro.txt")
    assert.same("Snodo serves these files through file:///docs/{+path}.\n", r.contents[1].text)
  end)

  it("refuses paths that escape the folder, in both eras' codes", function()
    for _, uri in ipairs { "file:///docs/..%2F12_resources.lua", "file:///docs/%00x",
                           "file:///docs/missing.txt" } do
      local _, err = server:read_resource(uri)
      assert.same({ code = -32002, message = "Resource not found", data = { uri = uri } }, err)
      local _, modern = server:read_resource(uri, support.MODERN)
      assert.same(-32602, modern.code)
    end
  end)

  it("lists the direct resources with their metadata", function()
    local items = server:list_all("resources/list", "resources")
    local readme
    for _, r in ipairs(items) do if r.name == "readme" then readme = r end end
    assert.same({ uri = "hex://snodo/readme", name = "readme", title = "Read me",
                  description = "What these examples are", mimeType = "text/markdown",
                  size = 42, annotations = { audience = { "user" }, priority = 0.5 } }, readme)
  end)
end)
