package schema

// DecodeReferenceSlow is DecodeReferenceWarn through the general
// conversion only, for the tests of package schema_test.
var DecodeReferenceSlow = decodeReferenceSlow

// DecodeReferenceFast is the fast conversion alone.
var DecodeReferenceFast = decodeReferenceFast
