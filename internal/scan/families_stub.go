package scan

// Placeholders until each family lands (helpers replace this file's
// functions in their own files and delete them here).

type noFamily struct{}

func (noFamily) scan(Input, func(Finding)) {}

func newSecretFamily() (family, error) { return noFamily{}, nil }
func newPIIFamily() (family, error)    { return noFamily{}, nil }
