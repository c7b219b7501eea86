-- Talking back to the client (seed 003 "Asking the client for input",
-- "Notifications"): one tool serves both eras, asking for a confirmation
-- with snodo.input_required() in 2026-07-28 and with ctx:elicit in an
-- initialize-era session; a long job reports progress and logs while it
-- sleeps without blocking other requests; a tool tells subscribers that a
-- resource changed.
local snodo = require "snodo"
local tool, argument = snodo.tool, snodo.argument

local confirm_schema = {
  type = "object",
  properties = { ok = { type = "boolean", description = "Send it?" } },
  required = { "ok" },
}

tool "send_message" {
  description = "Send a message after the user confirms",
  argument "to"   { "string", required = true },
  argument "text" { "string", required = true },
  call = function(args, ctx)
    local question = ("Send %q to %s?"):format(args.text, args.to)
    local answer
    if ctx.protocol_version == "2026-07-28" then
      answer = ctx:input_response("confirm")
      if not answer then
        return snodo.input_required():elicit("confirm", question, confirm_schema)
                                     :state({ to = args.to })
      end
    else
      local err
      answer, err = ctx:elicit(question, confirm_schema)
      if not answer then return nil, "Could not ask for a confirmation: " .. err end
    end
    if answer.action == "accept" and answer.content and answer.content.ok then
      return ("Sent to %s."):format(args.to)
    end
    return "Not sent."
  end,
}

tool "long_job" {
  description = "A job in steps, reporting progress",
  argument "steps" { "integer", minimum = 1, maximum = 10 },
  call = function(args, ctx)
    local steps = args.steps or 3
    for i = 1, steps do
      ctx:sleep(10) -- other requests are served meanwhile
      ctx:progress(i, steps, ("step %d of %d"):format(i, steps))
    end
    ctx:log("info", "long_job finished", { steps = steps })
    return ("done in %d steps"):format(steps)
  end,
}

tool "touch_readme" {
  description = "Tell subscribers that the readme changed",
  call = function()
    snodo.notify.resource_updated("hex://snodo/readme")
    return "touched"
  end,
}
