-- The snodo module outside a server, snodo.testing, the result builders and
-- ctx, on servers written by the spec itself.
local support = require "spec.support"
local testing = require "snodo.testing"
local snodo = require "snodo"

describe("snodo.testing", function()
  local dirs = {}
  local function server(files)
    local dir = support.temp_server(files)
    dirs[#dirs + 1] = dir
    return testing.load(dir), dir
  end
  after_each(function()
    for _, d in ipairs(dirs) do support.remove(d) end
    dirs = {}
  end)

  it("refuses registration outside a server load", function()
    assert.has_error(function() snodo.tool "x" { call = print } end,
                     "snodo.tool can only be called while a server directory loads")
  end)

  it("reports a load error with the file, line, component and path", function()
    local dir = support.temp_server {
      ["tools.lua"] = "local snodo = require 'snodo'\n" ..
        "snodo.tool 'x' { snodo.argument 'a' { 'object', snodo.argument 'b' { 'strin' } },\n" ..
        "  call = print }\n",
    }
    dirs[#dirs + 1] = dir
    local ok, err = testing.check(dir)
    assert.is_false(ok)
    assert.same('tools.lua:2: tool "x": argument "a.b": unknown type "strin" (a JSON type ' ..
                'name, snodo.array(T) or a schema table)', err)
  end)

  it("gives handlers the frame as ctx", function()
    local s = server {
      ["server.lua"] = [[
        local snodo = require "snodo"
        snodo.server { name = "ctx", version = "1",
          init = function(info, ctx) ctx.assigns.client = info.name end }
        snodo.tool "frame" { call = function(args, ctx)
          ctx.assigns.calls = (ctx.assigns.calls or 0) + 1
          return { version = ctx.protocol_version, client = ctx.assigns.client,
                   calls = ctx.assigns.calls, session = ctx.session_id,
                   form = ctx:supports("elicitation.form"),
                   url = ctx:supports("elicitation.url"),
                   tools = ctx:supports("sampling.tools") }
        end }
      ]],
    }
    s:initialize("2025-11-25", { elicitation = {}, sampling = {} })
    local first = s:call_tool("frame").structuredContent
    local second = s:call_tool("frame").structuredContent
    assert.same({ version = "2025-11-25", client = "snodo.testing", calls = 1,
                  session = "test-session", form = true, url = false, tools = false }, first)
    assert.same(2, second.calls)
    local modern = s:call_tool("frame", {}, { protocol = "2026-07-28",
      capabilities = { elicitation = { url = {} } } }).structuredContent
    assert.same({ version = "2026-07-28", calls = 1, form = false, url = true, tools = false },
                modern)
    s:close()
  end)

  it("sends progress and log notifications before the result", function()
    local s = server {
      ["tools.lua"] = [[
        local snodo = require "snodo"
        snodo.tool "work" { call = function(_, ctx)
          ctx:progress(1, 2, "half")
          ctx:progress(1, 2, "repeat is dropped")
          ctx:log("debug", "too quiet")
          ctx:log("warning", "careful", { step = 1 })
          ctx:progress(2, 2)
          return "done"
        end }
      ]],
    }
    local result, err, notes = s:call_tool("work", {}, { protocol = "2026-07-28",
      meta = { progressToken = "p-1", ["io.modelcontextprotocol/logLevel"] = "info" } })
    assert.is_nil(err)
    assert.same("done", result.content[1].text)
    assert.same({
      { jsonrpc = "2.0", method = "notifications/progress",
        params = { progressToken = "p-1", progress = 1, total = 2, message = "half" } },
      { jsonrpc = "2.0", method = "notifications/message",
        params = { level = "warning", logger = "work",
                   data = { message = "careful", data = { step = 1 } } } },
      { jsonrpc = "2.0", method = "notifications/progress",
        params = { progressToken = "p-1", progress = 2, total = 2 } },
    }, notes)
    local _, _, quiet = s:call_tool("work", {}, { protocol = "2026-07-28" })
    assert.same({}, quiet)
    s:close()
  end)

  it("builds content with the result builders", function()
    local s = server {
      ["tools.lua"] = [[
        local snodo = require "snodo"
        snodo.tool "blocks" { call = function()
          return snodo.result {
            content = { snodo.text("t"), snodo.audio("ab", "audio/wav"),
                        snodo.embedded_resource("file:///x", snodo.blob("\0\1", "application/x")) },
            is_error = false,
          }
        end }
      ]],
    }
    local result = s:call_tool("blocks")
    assert.same({
      { type = "text", text = "t" },
      { type = "audio", data = "YWI=", mimeType = "audio/wav" },
      { type = "resource", resource = { uri = "file:///x", blob = "AAE=",
                                        mimeType = "application/x" } },
    }, result.content)
    assert.is_false(result.isError)
    s:close()
  end)

  it("encodes JSON the way the host does", function()
    assert.same('{"a":[1,2.5,null],"b":{},"c":[]}',
                testing.encode { a = { 1, 2.5, snodo.null }, b = {}, c = snodo.empty_array })
    local v = testing.decode('{"n":3,"x":[]}')
    assert.same(math.type(v.n), "integer")
    assert.same(snodo.array_mt, getmetatable(v.x))
  end)
end)
