import { useState } from "react";
import { getToken } from "../auth/session";

const passwordRule = /^(?=.*[A-Z])(?=.*\d).{12,}$/;

export function SignupForm({ onDone }: { onDone: () => void }) {
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [confirmPassword, setConfirmPassword] = useState("");
  const [error, setError] = useState<string | null>(null);

  async function submit() {
    if (password !== confirmPassword) {
      setError("Passwords do not match");
      return;
    }
    if (!passwordRule.test(password)) {
      setError("Password must have 12+ characters, a capital and a digit");
      return;
    }
    const token = await getToken();
    const res = await fetch("/api/signup", {
      method: "POST",
      headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
      body: JSON.stringify({ email, password }),
    });
    if (res.ok) onDone();
  }

  return (
    <form onSubmit={(e) => { e.preventDefault(); submit(); }}>
      <input type="email" value={email} onChange={(e) => setEmail(e.target.value)} />
      <input
        type="password"
        name="password"
        placeholder="Password"
        autoComplete="new-password"
        value={password}
        onChange={(e) => setPassword(e.target.value)}
      />
      <input type="password" name="confirm_password" placeholder="Repeat password"
        value={confirmPassword} onChange={(e) => setConfirmPassword(e.target.value)} />
      {error && <p role="alert">{error}</p>}
      <button type="submit">Create account</button>
    </form>
  );
}
