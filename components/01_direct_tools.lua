-- Raw tools: a hand-written JSON Schema instead of argument declarations
-- (seed: "use Snodo.Tool takes a hand-written schema instead").
local snodo = require "snodo"

snodo.tool "version" {
  description = "Latest version of a package",
  input_schema = {
    type = "object",
    properties = { name = { type = "string" } },
    required = { "name" },
  },
  output_schema = { type = "object", properties = { version = { type = "string" } } },
  annotations = { read_only_hint = true, open_world_hint = false },
  call = function(args, ctx)
    return { version = "1.2.3" } -- a table is structured content
  end,
}

snodo.tool "lookup" {
  description = "Look a package up; a miss is a tool error the model can act on",
  input_schema = {
    type = "object",
    properties = { name = { type = "string", minLength = 1 } },
    required = { "name" },
    additionalProperties = false,
  },
  call = function(args)
    local known = { jason = "A JSON library", plug = "A web middleware library" }
    local found = known[args.name]
    if not found then
      return nil, ("No package named %s"):format(args.name)
    end
    return found
  end,
}
