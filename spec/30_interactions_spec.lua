-- components/30_interactions.lua: input round trips, progress, notify.
local support = require "spec.support"

describe("30_interactions", function()
  local server
  before_each(function() server = support.components_server() end)
  after_each(function() server:close() end)

  local modern_form = { protocol = "2026-07-28", capabilities = { elicitation = {} } }

  it("asks for a confirmation, then sends on the retry", function()
    local args = { to = "ada", text = "hi" }
    local first = server:call_tool("send_message", args, modern_form)
    assert.same("input_required", first.resultType)
    local ask = first.inputRequests.confirm
    assert.same("elicitation/create", ask.method)
    assert.same('Send "hi" to ada?', ask.params.message)
    assert.is_string(first.requestState)
    local r = server:request("tools/call", {
      name = "send_message", arguments = args, requestState = first.requestState,
      inputResponses = { confirm = { action = "accept", content = { ok = true } } },
    }, modern_form)
    assert.same("Sent to ada.", r.result.content[1].text)
  end)

  it("refuses a client that cannot show a form", function()
    local _, err = server:call_tool("send_message", { to = "ada", text = "hi" },
                                    { protocol = "2026-07-28" })
    assert.same(-32021, err.code)
    assert.same({ requiredCapabilities = { elicitation = {} } }, err.data)
  end)

  it("refuses a state replayed with other arguments", function()
    local first = server:call_tool("send_message", { to = "ada", text = "hi" }, modern_form)
    local r = server:request("tools/call", {
      name = "send_message", arguments = { to = "bob", text = "hi" },
      requestState = first.requestState,
      inputResponses = { confirm = { action = "accept", content = { ok = true } } },
    }, modern_form)
    assert.same({ code = -32602,
                  message = "Invalid params: requestState does not match these arguments" },
                r.error)
  end)

  it("cannot wait for the client in-process, and says so", function()
    local result = server:call_tool("send_message", { to = "ada", text = "hi" },
                                    { capabilities = { elicitation = {} } })
    assert.is_true(result.isError)
    assert.same("Could not ask for a confirmation: this transport cannot wait for the client",
                result.content[1].text)
  end)

  it("reports progress in order and logs at the requested level", function()
    local result, _, notes = server:call_tool("long_job", { steps = 2 }, {
      protocol = "2026-07-28",
      meta = { progressToken = 9, ["io.modelcontextprotocol/logLevel"] = "info" },
    })
    assert.same("done in 2 steps", result.content[1].text)
    assert.same({ 1, 2, "info" }, { notes[1].params.progress, notes[2].params.progress,
                                    notes[3].params.level })
    assert.same("step 2 of 2", notes[2].params.message)
  end)
end)
