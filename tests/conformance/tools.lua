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
    if not ctx:supports("sampling") then
      error(snodo.errors.new(-32021, "Missing required client capability: sampling",
                             { requiredCapabilities = { sampling = {} } }))
    end
    return "The client declared sampling"
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
