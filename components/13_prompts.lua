-- Prompts: flat string arguments checked before render; a string is one
-- user message, snodo.message builds several (seed "Prompts").
local snodo = require "snodo"
local argument = snodo.argument

snodo.prompt "review" {
  description = "Review a package",
  argument "name"  { required = true, description = "Package name" },
  argument "focus" { description = "quality, security, or upgrade" },
  render = function(args, ctx)
    return ("Review %s, focusing on %s."):format(args.name, args.focus or "quality")
  end,
}

snodo.prompt "pair" {
  title = "Pair on a change",
  description = "A short conversation to start pairing",
  argument "topic" { required = true },
  render = function(args)
    return snodo.prompt_result({
      snodo.message("user", ("Let's pair on %s."):format(args.topic)),
      snodo.message("assistant", snodo.text("Sure. What is the first step?")),
      snodo.message("user", snodo.resource_link("hex://snodo/readme", "readme")),
    }, { description = "Pairing on " .. args.topic,
         metadata = { ["com.example/kind"] = "pairing" } })
  end,
}
