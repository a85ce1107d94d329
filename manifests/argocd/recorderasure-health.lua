-- Argo CD health of a RecordErasure (kafka-retention.io/RecordErasure). Argo CD runs this
-- with gopher-lua (Lua 5.1) and the object as the global `obj`.
--   no phase yet                               -> Progressing (not taken up yet)
--   Pending, Scanning, Tombstoned, ValuesErased,
--   AwaitingRetention                          -> Progressing, with the Ready condition
--   KeyErased without a receipt                -> Progressing (erased; the receipt is
--                                                 signed once the signing key is there)
--   KeyErased with its receipt, DryRun         -> Healthy
--   Failed                                     -> Degraded, with the Ready condition (a
--                                                 refused spec names its field there)
-- Messages hold what the operator wrote: digests, counts and topic names, never a key.
local hs = {}

local function condition(conditions, kind)
  if conditions == nil then
    return nil
  end
  for _, c in ipairs(conditions) do
    if c.type == kind then
      return c
    end
  end
  return nil
end

local function said(c)
  if c == nil then
    return ""
  end
  return (c.reason or "") .. ": " .. (c.message or "")
end

local status = obj.status
if status == nil or status.phase == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator to take up this erasure"
  return hs
end

local phase = status.phase
local ready = condition(status.conditions, "Ready")
local function told()
  if ready == nil then
    return phase
  end
  return phase .. ": " .. said(ready)
end

if phase == "Failed" then
  hs.status = "Degraded"
  hs.message = told()
  return hs
end

local receipt = status.receipt
if phase == "DryRun" or (phase == "KeyErased" and receipt ~= nil and receipt.sha256 ~= nil) then
  hs.status = "Healthy"
  hs.message = told()
  return hs
end

if phase == "Pending" or phase == "Scanning" or phase == "Tombstoned"
    or phase == "ValuesErased" or phase == "AwaitingRetention" or phase == "KeyErased" then
  hs.status = "Progressing"
  hs.message = told()
  return hs
end

hs.status = "Unknown"
hs.message = "Unknown phase " .. tostring(phase)
return hs
