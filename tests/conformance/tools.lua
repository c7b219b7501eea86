-- Tools the suite calls (FIXTURE.md C.4). Every listed tool has a
-- description; a tool without arguments has the schema
-- {type = "object", properties = {}}.
local snodo = require "snodo"
local media = require "media"
local tool, argument = snodo.tool, snodo.argument

tool "test_simple_text" {
  description = "Returns a simple text response",
  call = function() return "This is a simple text response for testing." end,
}

tool "test_image_content" {
  description = "Returns an image",
  call = function()
    return snodo.result { content = { snodo.image(media.png, "image/png") } }
  end,
}

tool "test_audio_content" {
  description = "Returns audio",
  call = function()
    return snodo.result { content = { snodo.audio(media.wav, "audio/wav") } }
  end,
}

tool "test_embedded_resource" {
  description = "Returns an embedded resource",
  call = function()
    return snodo.result { content = {
      snodo.embedded_resource("test://embedded-resource", "This is an embedded resource content.",
                              { mime_type = "text/plain" }),
    } }
  end,
}

tool "test_multiple_content_types" {
  description = "Returns text, an image and a resource",
  call = function()
    return snodo.result { content = {
      snodo.text("Multiple content types test:"),
      snodo.image(media.png, "image/png"),
      snodo.embedded_resource("test://mixed-content-resource", '{"test":"data","value":123}',
                              { mime_type = "application/json" }),
    } }
  end,
}

tool "test_error_handling" {
  description = "Always fails as a tool error",
  call = function() return nil, "This tool intentionally returns an error for testing" end,
}

tool "test_tool_with_progress" {
  description = "Reports progress 0, 50 and 100 when the request carries a progress token",
  call = function(_, ctx)
    local token = ctx.request_meta and ctx.request_meta.progressToken
    for _, done in ipairs { 0, 50, 100 } do
      ctx:progress(done, 100, ("Completed step %d of 100"):format(done))
    end
    return ("Progress reported for token %s"):format(tostring(token))
  end,
}

tool "test_tool_with_logging" {
  description = "Logs three messages at info level",
  call = function(_, ctx)
    ctx:log("info", "Tool execution started")
    ctx:log("info", "Tool processing data")
    ctx:log("info", "Tool execution completed")
    return "Tool with logging executed successfully"
  end,
}

-- 2026-07-28 diagnostics (FIXTURE.md C.3)
tool "test_logging_tool" {
  description = "Logs one message; 2026-07-28 drops it unless the request sets a log level",
  call = function(_, ctx)
    ctx:log("info", "test_logging_tool ran")
    return "Logged (if the request asked for it)"
  end,
}

-- Needs the client's sampling capability; without it the request is
-- refused with -32021 naming what is missing (HTTP 400).
tool "test_missing_capability" {
  description = "Needs the client's sampling capability",
  call = function(_, ctx)
    local answer = ctx:input_response("capital")
    if answer then return "The client declared sampling" end
    -- the host refuses this with -32021 when the client did not declare sampling
    return snodo.input_required():sample("capital", {
      messages = { { role = "user", content = { type = "text", text = "Capital of France?" } } },
      maxTokens = 10,
    })
  end,
}

tool "test_streaming_elicitation" {
  description = "Answers without any server-to-client request",
  call = function() return "No elicitation needed" end,
}

-- The pending header-validation scenario (FIXTURE.md C.8): Region is
-- mirrored in Mcp-Param-Region.
tool "test_x_mcp_header" {
  description = "Echoes a region routed through the Mcp-Param-Region header",
  argument "region" { "string", required = true, header = "Region" },
  argument "level" { "integer" },
  call = function(args) return ("region %s, level %s"):format(args.region, tostring(args.level)) end,
}

-- Listed unchanged (pending scenario json-schema-2020-12).
tool "json_schema_2020_12_tool" {
  description = "A tool whose input schema uses JSON Schema 2020-12 keywords",
  input_schema = {
    ["$schema"] = "https://json-schema.org/draft/2020-12/schema",
    type = "object",
    ["$defs"] = {
      address = {
        ["$anchor"] = "addressDef",
        type = "object",
        properties = { street = { type = "string" }, city = { type = "string" } },
      },
    },
    properties = {
      name = { type = "string" },
      address = { ["$ref"] = "#/$defs/address" },
      contactMethod = { type = "string", enum = { "phone", "email" } },
      phone = { type = "string" },
      email = { type = "string" },
    },
    allOf = { { anyOf = { { required = { "phone" } }, { required = { "email" } } } } },
    ["if"] = { properties = { contactMethod = { const = "phone" } }, required = { "contactMethod" } },
    ["then"] = { required = { "phone" } },
    ["else"] = { required = { "email" } },
    additionalProperties = false,
  },
  call = function() return "ok" end,
}

-- ---- C.6: multi round-trip input (2026-07-28) ----

local name_schema = { type = "object", properties = { name = { type = "string" } },
                      required = { "name" } }
local confirm_schema = { type = "object", properties = { ok = { type = "boolean" } },
                         required = { "ok" } }

local function accepted(ctx, key)
  local r = ctx:input_response(key)
  if type(r) == "table" and r.action == "accept" and type(r.content) == "table" then
    return r.content
  end
end

local function sampled_text(ctx, key)
  local r = ctx:input_response(key)
  if type(r) == "table" and type(r.content) == "table" then return r.content.text end
end

tool "test_input_required_result_elicitation" {
  description = "Asks for the user's name, then greets",
  call = function(_, ctx)
    local answer = accepted(ctx, "user_name")
    if answer and answer.name then return ("Hello, %s!"):format(answer.name) end
    return snodo.input_required():elicit("user_name", "What is your name?", name_schema)
  end,
}

tool "test_input_required_result_sampling" {
  description = "Asks the client's model a question",
  call = function(_, ctx)
    local text = sampled_text(ctx, "capital_question")
    if text then return "The model answered: " .. text end
    return snodo.input_required():sample("capital_question", {
      messages = { { role = "user",
                     content = { type = "text", text = "What is the capital of France?" } } },
      maxTokens = 100,
    })
  end,
}

tool "test_input_required_result_list_roots" {
  description = "Lists the client's roots",
  call = function(_, ctx)
    local r = ctx:input_response("client_roots")
    if type(r) == "table" and type(r.roots) == "table" then
      return ("Found %d root(s)"):format(#r.roots)
    end
    return snodo.input_required():list_roots("client_roots")
  end,
}

tool "test_input_required_result_request_state" {
  description = "Asks for a confirmation and carries state across the retry",
  call = function(_, ctx)
    local state = ctx:request_state()
    if accepted(ctx, "confirm") and type(state) == "table" and state.step == "confirm" then
      return "Confirmed: state-ok"
    end
    return snodo.input_required():elicit("confirm", "Please confirm", confirm_schema)
                                 :state({ step = "confirm" })
  end,
}

tool "test_input_required_result_multiple_inputs" {
  description = "Asks for three inputs at once",
  call = function(_, ctx)
    local name, greeting = accepted(ctx, "user_name"), sampled_text(ctx, "greeting")
    local roots = ctx:input_response("client_roots")
    if name and greeting and type(roots) == "table" then
      return ("%s, %s (%d roots)"):format(greeting, name.name or "?", #(roots.roots or {}))
    end
    return snodo.input_required()
      :elicit("user_name", "What is your name?", name_schema)
      :sample("greeting", {
        messages = { { role = "user", content = { type = "text", text = "Generate a greeting" } } },
        maxTokens = 50,
      })
      :list_roots("client_roots")
      :state({ step = "all" })
  end,
}

tool "test_input_required_result_multi_round" {
  description = "Two rounds of questions, the state changing between them",
  call = function(_, ctx)
    local state = ctx:request_state()
    if type(state) == "table" and state.round == 2 then
      local color = accepted(ctx, "step2")
      if color and color.color then
        return ("Multi-round complete for %s who likes %s"):format(state.name, color.color)
      end
    end
    if type(state) == "table" and state.round == 1 then
      local answer = accepted(ctx, "step1")
      if answer and answer.name then
        return snodo.input_required()
          :elicit("step2", "Step 2: What is your favorite color?",
                  { type = "object", properties = { color = { type = "string" } },
                    required = { "color" } })
          :state({ round = 2, name = answer.name })
      end
    end
    return snodo.input_required()
      :elicit("step1", "Step 1: What is your name?", name_schema)
      :state({ round = 1 })
  end,
}

tool "test_input_required_result_tampered_state" {
  description = "Signed state: a tampered retry is refused before this runs",
  call = function(_, ctx)
    if accepted(ctx, "confirm") and ctx:request_state() then return "Confirmed" end
    return snodo.input_required():elicit("confirm", "Please confirm", confirm_schema)
                                 :state({ step = "confirm" })
  end,
}

tool "test_input_required_result_capabilities" {
  description = "Asks only for what the client declared",
  call = function(_, ctx)
    if ctx.request_meta and next(ctx:input_response("q") or {}) then return "Thanks" end
    local input = snodo.input_required()
    if ctx:supports("elicitation.form") then
      return input:elicit("q", "Anything to add?", { type = "object", properties = {} })
    elseif ctx:supports("sampling") then
      return input:sample("q", { messages = { { role = "user",
        content = { type = "text", text = "Anything to add?" } } }, maxTokens = 20 })
    elseif ctx:supports("roots") then
      return input:list_roots("q")
    end
    return "Nothing to ask this client"
  end,
}

-- ---- C.4: server-to-client requests in the initialize era (2025-11-25) ----

-- a small JSON writer for the answer's content (flat tables of scalars)
local function to_json(v)
  if type(v) ~= "table" then
    return type(v) == "string" and ("%q"):format(v) or tostring(v)
  end
  local keys = {}
  for k in pairs(v) do keys[#keys + 1] = k end
  table.sort(keys)
  local parts = {}
  for _, k in ipairs(keys) do parts[#parts + 1] = ("%q:%s"):format(k, to_json(v[k])) end
  return "{" .. table.concat(parts, ",") .. "}"
end

local function answer_text(result)
  return ("action=%s, content=%s"):format(tostring(result.action), to_json(result.content))
end

tool "test_sampling" {
  description = "Asks the client's model",
  argument "prompt" { "string", required = true },
  call = function(args, ctx)
    local r, err = ctx:sample {
      messages = { { role = "user", content = { type = "text", text = args.prompt } } },
      maxTokens = 100,
    }
    if not r then return nil, err end
    return "LLM response: " .. tostring(r.content and r.content.text)
  end,
}

tool "test_elicitation" {
  description = "Asks the user",
  argument "message" { "string", required = true },
  call = function(args, ctx)
    local r, err = ctx:elicit(args.message, {
      type = "object",
      properties = {
        username = { type = "string", description = "User's response" },
        email = { type = "string", description = "User's email address" },
      },
      required = { "username", "email" },
    })
    if not r then return nil, err end
    return "User response: " .. answer_text(r)
  end,
}

tool "test_elicitation_sep1034_defaults" {
  description = "A form with defaults",
  call = function(_, ctx)
    local r, err = ctx:elicit("Please review and update the form fields with defaults", {
      type = "object",
      properties = {
        name = { type = "string", default = "John Doe" },
        age = { type = "integer", default = 30 },
        score = { type = "number", default = 95.5 },
        status = { type = "string", enum = { "active", "inactive", "pending" },
                   default = "active" },
        verified = { type = "boolean", default = true },
      },
      required = snodo.empty_array,
    })
    if not r then return nil, err end
    return "Elicitation completed: " .. answer_text(r)
  end,
}

tool "test_elicitation_sep1330_enums" {
  description = "A form with every enum shape",
  call = function(_, ctx)
    local r, err = ctx:elicit("Please choose", {
      type = "object",
      properties = {
        untitledSingle = { type = "string", enum = { "option1", "option2", "option3" } },
        titledSingle = { type = "string", oneOf = {
          { const = "value1", title = "First Option" },
          { const = "value2", title = "Second Option" },
          { const = "value3", title = "Third Option" },
        } },
        legacyEnum = { type = "string", enum = { "opt1", "opt2", "opt3" },
                       enumNames = { "Option One", "Option Two", "Option Three" } },
        untitledMulti = { type = "array", minItems = 1, maxItems = 3,
                          items = { type = "string", enum = { "option1", "option2", "option3" } } },
        titledMulti = { type = "array", minItems = 1, maxItems = 3, items = { anyOf = {
          { const = "value1", title = "First Choice" },
          { const = "value2", title = "Second Choice" },
          { const = "value3", title = "Third Choice" },
        } } },
      },
      required = snodo.empty_array,
    })
    if not r then return nil, err end
    return "Elicitation completed: " .. answer_text(r)
  end,
}
