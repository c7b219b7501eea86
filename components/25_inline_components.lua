-- Inline components: a tool with its handler in one declaration, several
-- helpers beside it, and a tool named after its file when it has no name.
local snodo = require "snodo"

local function greeting(name)
  return ("Hello, %s!"):format(name)
end

snodo.tool "greet" {
  description = "Create a greeting",
  snodo.argument "name" { "string", required = true },
  call = function(args) return greeting(args.name) end,
}

-- No name: this tool is called "25_inline_components", after the file.
snodo.tool {
  description = "List the tool groups",
  call = function() return { groups = { "web", "data" } } end,
}

snodo.resource "groups" {
  uri = "toolbox://groups",
  mime_type = "application/json",
  read = function() return { groups = { "web", "data" } } end,
}
