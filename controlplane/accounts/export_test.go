package accounts

// PasswordChecks is how many sign-in passwords s has hashed.
func PasswordChecks(s *Service) int64 { return s.passwordChecks.Load() }
