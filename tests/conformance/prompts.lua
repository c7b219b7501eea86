-- Prompts and completion (FIXTURE.md C.5).
local snodo = require "snodo"
local media = require "media"
local prompt, argument = snodo.prompt, snodo.argument

prompt "test_simple_prompt" {
  description = "A prompt without arguments",
  render = function() return "This is a simple prompt for testing." end,
}

prompt "test_prompt_with_arguments" {
  description = "A prompt with two required arguments",
  argument "arg1" { required = true, description = "First argument" },
  argument "arg2" { required = true, description = "Second argument" },
  completion_arguments = { "arg1" },
  complete = function() return snodo.completion({}, { total = 0, has_more = false }) end,
  render = function(args)
    return ("Prompt with arguments: arg1='%s', arg2='%s'"):format(args.arg1, args.arg2)
  end,
}

prompt "test_prompt_with_embedded_resource" {
  description = "A prompt that embeds a resource",
  argument "resourceUri" { required = true, description = "The resource to embed" },
  render = function(args)
    return {
      snodo.message("user", snodo.embedded_resource(args.resourceUri,
        "Embedded resource content for testing.", { mime_type = "text/plain" })),
      snodo.message("user", "Please process the embedded resource above."),
    }
  end,
}

prompt "test_prompt_with_image" {
  description = "A prompt with an image",
  render = function()
    return {
      snodo.message("user", snodo.image(media.png, "image/png")),
      snodo.message("user", "Please analyze the image above."),
    }
  end,
}

snodo.prompt "test_input_required_result_prompt" {
  description = "Asks for context before rendering",
  render = function(_, ctx)
    local r = ctx:input_response("user_context")
    if type(r) == "table" and r.action == "accept" and type(r.content) == "table" then
      return "Prompt with context: " .. tostring(r.content.context)
    end
    return snodo.input_required():elicit("user_context", "What context should the prompt use?",
      { type = "object", properties = { context = { type = "string" } },
        required = { "context" } })
  end,
}
