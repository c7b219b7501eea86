-- Shared constants: the 1x1 PNG and the tiny WAV the reference fixtures use,
-- as base64 text and as bytes. `require "media"` from the other files (this
-- file declares no component itself).
local M = {}

M.png_base64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
M.wav_base64 = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="

local alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

--- Decodes standard padded base64.
function M.decode(text)
  local value = {}
  for i = 1, #alphabet do value[alphabet:byte(i)] = i - 1 end
  local out, bits, nbits = {}, 0, 0
  for i = 1, #text do
    local v = value[text:byte(i)]
    if v then
      bits = (bits << 6) | v
      nbits = nbits + 6
      if nbits >= 8 then
        nbits = nbits - 8
        out[#out + 1] = string.char((bits >> nbits) & 0xFF)
      end
    end
  end
  return table.concat(out)
end

M.png = M.decode(M.png_base64)
M.wav = M.decode(M.wav_base64)
return M
